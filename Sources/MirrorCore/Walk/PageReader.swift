import Foundation
import NIOHTTP1

/// Reads one final response: a clean stop (`stop.status`), a parsed page, or a fault
/// saying why nothing of it may be stored. Pure: bytes in, records out.
struct PageReader: Sendable {
    let job: JobSpec

    /// Turns a final response into a parsed page, a clean stop or a fault.
    func read(_ response: HTTPResponse, url: RedactedURL, page: Int, requestBody: String) -> Result<Fetched, PageFault> {
        if job.stop.statuses.contains(response.status) {
            return .success(.stopStatus(response.status))
        }
        guard (200..<300).contains(response.status) else {
            return .failure(PageFault(url: url, status: response.status, problem: Self.statusProblem(response)))
        }
        do {
            let parsed = try parse(response, url: url, page: page)
            let next = job.next.map { Self.nextTarget($0, document: parsed.document, response: response, url: url) } ?? NextTarget.none
            // A configured path must lead to a whole number; what does not is reported by `verify`.
            var unreadable: [(key: UnreadableValue.Key, message: String)] = []
            func number(at path: JSONPath?, _ key: UnreadableValue.Key) -> Int? {
                guard let path else { return nil }
                let value = parsed.document.root.value(at: path)
                if let number = value?.intValue { return number }
                unreadable.append((key, "'\(path)' is not a whole number (found \(value.map { "\($0.kind)" } ?? "nothing"))"))
                return nil
            }
            let lastPage = number(at: job.stop.lastPage, .lastPage)
            let total = number(at: job.stop.total, .total)
            return .success(.page(ServedPage(
                origin: .fetched, content: .fresh(bytes: parsed.document.bytes, records: parsed.records),
                requestBody: requestBody, status: response.status, etag: response.headers["etag"],
                lastModified: response.headers["last-modified"], responseBytes: response.body.count,
                elementCount: parsed.elementCount, recordCount: parsed.records.count, rejected: parsed.rejected,
                repeated: parsed.repeated, files: parsed.files,
                next: next, lastPage: lastPage, total: total, unreadable: unreadable)))
        } catch let fault as PageFault {
            return .failure(fault)
        } catch {
            return .failure(PageFault(url: url, status: response.status, problem: "\(error)"))
        }
    }

    struct ParsedPage: Sendable {
        let document: JSONDocument
        let elementCount: Int
        let records: [PageCommit.Record]
        let rejected: [RejectedRecord]
        let repeated: [RepeatedID]
        let files: [RedactedURL]
    }

    func parse(_ response: HTTPResponse, url: RedactedURL, page: Int) throws -> ParsedPage {
        let document: JSONDocument
        do {
            document = try response.body.withUnsafeBytes { try JSONDocument(parsing: $0) }
        } catch {
            let problem = Self.looksLikeHTML(response) ? "response is HTML, not JSON" : "response is not JSON: \(error)"
            throw PageFault(url: url, status: response.status, problem: problem)
        }
        for rule in job.validate {
            let found = document.root.value(at: rule.path)
            if found?.kind != rule.kind {
                throw PageFault(url: url, status: response.status,
                                problem: "'\(rule.path)' must be \(rule.kind), found \(found.map { "\($0.kind)" } ?? "nothing")")
            }
        }
        guard let list = document.root.value(at: job.records) else {
            throw PageFault(url: url, status: response.status, problem: "no '\(job.records)' in the response")
        }
        guard list.kind == .array else {
            throw PageFault(url: url, status: response.status,
                            problem: "'\(job.records)' is not an array (found \(list.kind))")
        }
        let elements = list.elements
        var ids: [String?] = []
        ids.reserveCapacity(elements.count)
        var rejected: [RejectedRecord] = []
        // Ids are compared byte for byte, as SQLite compares them.
        var lastIndex: [ExactText: Int] = [:]
        lastIndex.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            let value = element.value(at: job.id)
            var id: String?
            if let value, value.kind == .string || value.kind == .number, let text = value.scalarText, !text.isEmpty {
                id = text
            }
            if let id {
                lastIndex[ExactText(id)] = index
            } else {
                let reason: String
                if value == nil, element.kind != .object {
                    let kind = element.kind == .null ? "null" : element.kind == .array ? "an array" : "a \(element.kind)"
                    reason = "record \(index) is \(kind), not an object"
                } else {
                    reason = "record \(index) has no usable id at '\(job.id)' (found \(value.map { "\($0.kind)" } ?? "nothing"))"
                }
                rejected.append(RejectedRecord(page: page, index: index, reason: reason))
            }
            ids.append(id)
        }
        var records: [PageCommit.Record] = []
        records.reserveCapacity(lastIndex.count)
        var earlier: [ExactText: [Int]] = [:]
        var stored: [JSONValue] = []
        for (index, element) in elements.enumerated() {
            guard let id = ids[index] else { continue }
            let key = ExactText(id)
            guard lastIndex[key] == index else {
                earlier[key, default: []].append(index)
                continue
            }
            records.append(PageCommit.Record(id: id, range: element.byteRange))
            if !job.downloads.isEmpty { stored.append(element) }
        }
        // Ids listed more than once: stored once, their last occurrence.
        let repeated = records.compactMap { record -> RepeatedID? in
            let key = ExactText(record.id)
            guard let before = earlier[key], let last = lastIndex[key] else { return nil }
            return RepeatedID(page: page, id: record.id, indexes: before + [last])
        }
        // The files the stored records point to, each once, in record order.
        var files: [RedactedURL] = []
        if !job.downloads.isEmpty {
            var seen: Set<ExactText> = []
            for element in stored {
                for path in job.downloads {
                    for value in element.values(at: path) {
                        let candidates = value.kind == .array ? value.elements : [value]
                        for candidate in candidates {
                            if let url = candidate.stringValue, !url.isEmpty, seen.insert(ExactText(url)).inserted {
                                files.append(RedactedURL(real: url, redactor: job.redactor))
                            }
                        }
                    }
                }
            }
        }
        return ParsedPage(document: document, elementCount: elements.count, records: records, rejected: rejected,
                          repeated: repeated, files: files)
    }

    static func nextTarget(_ next: JobSpec.Next, document: JSONDocument, response: HTTPResponse, url: RedactedURL) -> NextTarget {
        switch next {
        case .link:
            guard let header = response.headers["link"], let target = LinkHeader.next(in: header, base: url.real) else {
                return .none
            }
            return .url(target)
        case let .path(path):
            guard let value = document.root.value(at: path), value.kind == .string || value.kind == .number,
                  let text = value.scalarText, !text.isEmpty else {
                return .none
            }
            let lower = text.lowercased()
            return lower.hasPrefix("http://") || lower.hasPrefix("https://") ? .url(text) : .cursor(text)
        }
    }

    static func looksLikeHTML(_ response: HTTPResponse) -> Bool {
        if let type = response.headers["content-type"], type.lowercased().contains("html") { return true }
        let prefix = response.body.prefix(64).drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        return prefix.first == UInt8(ascii: "<")
    }

    static func statusProblem(_ response: HTTPResponse) -> String {
        let reason = HTTPResponseStatus(statusCode: response.status).reasonPhrase
        return reason.isEmpty || reason.hasPrefix("unknown") ? "unexpected status" : "unexpected status (\(reason.lowercased()))"
    }
}
