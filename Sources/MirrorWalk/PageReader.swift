import Foundation
import MirrorHTTP
import MirrorJSON
import MirrorModel
import NIOHTTP1

/// Reads one final response: a clean stop (`stop.status`), a parsed page, or a fault
/// saying why nothing of it may be stored. Pure: bytes in, records out.
struct PageReader: Sendable {
    package let job: JobSpec
    /// The job's typed columns, whose mismatches each page's records are checked for.
    private let columnTypes: ColumnTypes?
    /// How a body that is not JSON becomes the array of its records.
    private let recordBody: RecordBody

    package init(job: JobSpec) {
        self.job = job
        columnTypes = ColumnTypes(job.columns)
        recordBody = RecordBody(format: job.format, columns: job.columns, records: job.records)
    }

    /// Turns a final response into a parsed page, a clean stop or a fault.
    package func read(_ response: HTTPResponse, url: RedactedURL, page: Int, requestBody: String) -> Result<Fetched, PageFault> {
        if job.stop.statuses.contains(response.status) {
            return .success(.stopStatus(response.status))
        }
        guard (200..<300).contains(response.status) else {
            return .failure(PageFault(url: url, status: response.status, problem: Self.statusProblem(response, redactor: job.redactor)))
        }
        do {
            let parsed = try parse(response, url: url, page: page)
            let next = job.next.map { Self.nextTarget($0, document: parsed.document, response: response, url: url) } ?? NextTarget.none
            // A configured path must lead to a whole number; what does not is reported by `verify`.
            var unreadable: [(key: UnreadableValue.Key, message: String)] = []
            // A number, or a string of one (`"20"`), as APIs written in PHP send them.
            func number(at path: JSONPath?, _ key: UnreadableValue.Key) -> Int? {
                guard let path else { return nil }
                let value = parsed.document.root.value(at: path)
                if let number = value?.intValue ?? value?.stringValue.flatMap({ Int($0) }) { return number }
                unreadable.append((key, "'\(path)' is not a whole number (found \(value.map { "\($0.kind)" } ?? "nothing"))"))
                return nil
            }
            var lastPage = number(at: job.stop.lastPage, .lastPage)
            if let count = number(at: job.stop.pages, .pages) {
                // The page value of page number `count`, for walks from 0 and from 1 alike.
                let (span, overflow) = max(count - 1, 0).multipliedReportingOverflow(by: job.pages.step)
                let (last, beyond) = job.pages.from.addingReportingOverflow(span)
                if !overflow, !beyond { lastPage = last }
            }
            let total = number(at: job.stop.total, .total)
            var hasMore: Bool?
            if let path = job.stop.hasMore {
                let value = parsed.document.root.value(at: path)
                hasMore = value?.boolValue ?? false
                if let value, value.kind != .bool, value.kind != .null {
                    unreadable.append((.hasMore, "'\(path)' is not true or false (found \(value.kind))"))
                }
            }
            return .success(.page(ServedPage(
                origin: .fetched, content: .fresh(parsed.records, envelope: parsed.envelope),
                requestBody: requestBody, status: response.status, etag: response.headers["etag"],
                lastModified: response.headers["last-modified"], responseBytes: response.bodyCount,
                elementCount: parsed.elementCount, recordCount: parsed.records.count, rejected: parsed.rejected,
                repeated: parsed.repeated, files: parsed.files,
                next: next, lastPage: lastPage, total: total, hasMore: hasMore,
                cursorIsNumber: Self.cursorIsNumber(job.next, document: parsed.document),
                absent: absentPaths(parsed.document), stopPathsFound: stopPathsFound(parsed.document),
                downloadsFound: parsed.downloadsFound, unreadable: unreadable,
                deleted: parsed.deleted, highest: parsed.highest, lowest: parsed.lowest, warnings: parsed.warnings,
                mismatches: parsed.mismatches)))
        } catch let fault as PageFault {
            return .failure(fault)
        } catch {
            return .failure(PageFault(url: url, status: response.status, problem: "\(error)"))
        }
    }

    struct ParsedPage: Sendable {
        package let document: JSONDocument
        package let envelope: PageEnvelope
        package let elementCount: Int
        package let records: PageRecords
        package let rejected: [RejectedRecord]
        package let repeated: [RepeatedID]
        package let files: [RedactedURL]
        /// Indexes into `downloads` of the paths some stored record holds.
        package let downloadsFound: Set<Int>
        /// Ids of the records marked deleted (`deleted`): not among `records`.
        package let deleted: [String]
        /// The highest and lowest values of the `incremental` path among the page's records.
        package let highest: SinceValue?
        package let lowest: SinceValue?
        /// What a user should know about the page, though it is stored (GraphQL errors beside data).
        package var warnings: [String] = []
        /// The records to store whose values the job's typed columns make NULL.
        package var mismatches = ColumnMismatches()
    }

    /// The `next` and `has_more` paths `document` lacks where that looks like a mistake in
    /// the job rather than a last page that leaves its link out: none of the path is there
    /// (`@odata.nextLink` as a dot path, or `meta.next` where the API says `pagination`),
    /// or the deepest object found holds a key like the one missing (`next_cursor` for
    /// `nextCursor`). Each with the keys of the deepest value found.
    func absentPaths(_ document: JSONDocument) -> [String] {
        var paths: [JSONPath] = []
        switch job.next {
        case let .path(path)?, let .url(path)?, let .cursor(path)?, let .scroll(path, _)?: paths.append(path)
        case .header?, .link?, nil: break
        }
        if let hasMore = job.stop.hasMore { paths.append(hasMore) }
        return paths.compactMap { path in
            guard document.root.value(at: path) == nil, !path.segments.isEmpty else { return nil }
            // The deepest value the path's keys lead to.
            var found = document.root
            var depth = 0
            for segment in path.segments {
                guard case let .key(key) = segment, let child = found.child(key) else { break }
                found = child
                depth += 1
            }
            let keys = found.members.map(\.key)
            if depth > 0 || path.segments.count == 1 {
                // A filter or wildcard that matched nothing: a last page.
                guard case let .key(missing) = path.segments[depth] else { return nil }
                func plain(_ key: String) -> String { key.lowercased().filter { $0 != "_" && $0 != "-" } }
                guard keys.contains(where: { plain($0) == plain(missing) }) else { return nil }
            }
            let shown = keys.prefix(10).map { "'\($0)'" }.joined(separator: ", ") + (keys.count > 10 ? ", …" : "")
            return "'\(path)' is not in the response" + (keys.isEmpty ? "" : " (its keys: \(shown))")
        }
    }

    /// The configured `stop` paths `document` holds.
    package func stopPathsFound(_ document: JSONDocument) -> Set<String> {
        Set([job.stop.lastPage, job.stop.pages, job.stop.total].compactMap { $0 }
            .filter { document.root.value(at: $0) != nil }.map(\.description))
    }

    /// Parses the response's body (taken from it, and compacted in place) and reads its
    /// records. The records array is folded (see `JSONDocument`): each record is parsed
    /// on its own when its id is read, and only the record's place is kept.
    package func parse(_ response: HTTPResponse, url: RedactedURL, page: Int) throws -> ParsedPage {
        let html = job.format == .xml ? Self.looksLikeHTMLPage(response) : Self.looksLikeHTML(response)
        var body = response.takeBody()
        // JSON Lines are parsed once, joined: the lines are kept to name the bad one.
        var lines: [UInt8] = []
        if job.format != .json {
            if job.format == .ndjson { lines = body }
            guard !html else { throw PageFault(url: url, status: response.status, problem: "response is HTML, not \(job.format.name)") }
            do {
                body = try recordBody.json(body)
            } catch {
                throw PageFault(url: url, status: response.status, problem: error.description)
            }
        }
        let document: JSONDocument
        do {
            document = try JSONDocument(compacting: consume body, foldingAt: job.records.segments.count + 1)
        } catch {
            if let bad = recordBody.badLine(lines) { throw PageFault(url: url, status: response.status, problem: bad.description) }
            throw PageFault(url: url, status: response.status,
                            problem: html ? "response is HTML, not JSON" : "response is not JSON: \(error)")
        }
        lines = []
        // GraphQL says a failure with a 200: `errors` with no data is one; beside data, a warning.
        var warnings: [String] = []
        if job.isGraphQL, let errors = document.root["errors"]?.elements, !errors.isEmpty {
            let said = GraphQLErrors.said(errors, redactor: job.redactor)
            guard let records = document.root.value(at: job.records), records.kind != .null else {
                throw PageFault(url: url, status: response.status, problem: "GraphQL error: \(said)")
            }
            warnings.append("page \(page): the response holds GraphQL errors beside its data, stored all the same: \(said)")
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
        // `null` is an empty page; `records: "."` on an object is that one record.
        guard list.kind == .array || list.kind == .null || (list.kind == .object && job.records.segments.isEmpty) else {
            throw PageFault(url: url, status: response.status,
                            problem: "'\(job.records)' is not an array (found \(list.kind))")
        }
        let collected = RecordCollector(idPath: job.id, page: page).collect(list)
        let facts = facts(of: collected.records)
        var envelope = PageEnvelope(document: document, records: list, redactor: job.redactor)
        envelope.headers = PageEnvelope.kept(response.headers, redactor: job.redactor)
        // Served again as the JSON it was read as, not as the API's CSV, XML or lines.
        if job.format != .json { envelope.headers.removeAll { $0.name == "content-type" } }
        return ParsedPage(document: document, envelope: envelope,
                          elementCount: collected.elementCount, records: facts.kept,
                          rejected: collected.rejected, repeated: collected.repeated, files: facts.files,
                          downloadsFound: facts.downloadsFound, deleted: facts.deleted, highest: facts.highest,
                          lowest: facts.lowest, warnings: warnings,
                          mismatches: columnTypes?.mismatches(in: facts.kept) ?? ColumnMismatches())
    }

    /// What the records say beyond their ids, for the keys that ask (each record parsed
    /// once, and only then).
    struct RecordFacts {
        /// The records to store: those not marked deleted.
        package var kept: PageRecords
        /// Ids of the records marked deleted (`deleted`).
        package var deleted: [String] = []
        /// The highest and lowest values of the `incremental` path among all the records.
        package var highest: SinceValue?
        package var lowest: SinceValue?
        /// The files the kept records point to (`downloads`), each once, in record order.
        package var files: [RedactedURL] = []
        /// Indexes into `downloads` of the paths some kept record holds.
        package var downloadsFound: Set<Int> = []
    }

    /// With `drop:` or `hash:`, the kept records are written again as they are to be
    /// stored, after every path above was read in them as served.
    func facts(of records: PageRecords) -> RecordFacts {
        var facts = RecordFacts(kept: records)
        var sincePath: JSONPath?
        if case let .path(path)? = job.incremental?.source { sincePath = path }
        let redactor = job.redaction.map(RecordRedactor.init)
        guard sincePath != nil || job.deleted != nil || !job.downloads.isEmpty || redactor != nil else { return facts }
        var deletedIndexes: Set<Int> = []
        var seen: Set<ExactText> = []
        var index = 0
        var redacted = redactor.map { _ in PageRecords.Builder(capacity: records.bytes.count, count: records.count) }
        records.forEach { id, json in
            defer { index += 1 }
            // The page was checked whole: a record always parses. Were it not to, it is not
            // stored where fields are to be taken out of it.
            guard let record = try? JSONDocument(parsing: UnsafeRawBufferPointer(json)) else { return }
            if let sincePath, let value = record.root.value(at: sincePath).flatMap(SinceValue.init) {
                facts.highest = SinceValue.max(facts.highest, value)
                facts.lowest = SinceValue.least(facts.lowest, value)
            }
            if job.deleted?.marks(record.root) == true {
                facts.deleted.append(String(decoding: id, as: UTF8.self))
                deletedIndexes.insert(index)
                return
            }
            if let redactor { redacted?.append(id: id) { redactor.append(record.root, to: &$0) } }
            for (path, pathIndex) in zip(job.downloads, job.downloads.indices) {
                let values = record.root.values(at: path)
                if !values.isEmpty { facts.downloadsFound.insert(pathIndex) }
                for candidate in values.flatMap({ $0.kind == .array ? $0.elements : [$0] }) {
                    if let url = candidate.stringValue, !url.isEmpty, seen.insert(ExactText(url)).inserted {
                        facts.files.append(RedactedURL(real: url, redactor: job.redactor))
                    }
                }
            }
        }
        if let redacted {
            facts.kept = redacted.records
        } else if !deletedIndexes.isEmpty {
            facts.kept = records.keeping { !deletedIndexes.contains($0) }
        }
        return facts
    }

    static func nextTarget(_ next: JobSpec.Next, document: JSONDocument, response: HTTPResponse, url: RedactedURL) -> NextTarget {
        switch next {
        case .link:
            guard let header = response.headers["link"], let target = LinkHeader.next(in: header, base: url.real) else {
                return .none
            }
            return .url(target)
        case let .path(path):
            return text(at: path).map { classify($0, base: url.real) } ?? .none
        case let .url(path):
            return text(at: path).map { .url(resolve($0, base: url.real)) } ?? .none
        case let .cursor(path), let .scroll(path, _):
            return text(at: path).map { .cursor($0) } ?? .none
        case let .header(name):
            guard let value = response.headers[name.lowercased()]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else {
                return .none
            }
            return classify(value, base: url.real)
        }

        /// A string or number at `path`; nil for anything else and for an empty string.
        func text(at path: JSONPath) -> String? {
            guard let value = document.root.value(at: path), value.kind == .string || value.kind == .number,
                  let text = value.scalarText, !text.isEmpty else { return nil }
            return text
        }
    }

    /// Whether the next cursor the response gives is a JSON number.
    package static func cursorIsNumber(_ next: JobSpec.Next?, document: JSONDocument) -> Bool {
        switch next {
        case let .path(path)?, let .cursor(path)?, let .scroll(path, _)?: return document.root.value(at: path)?.kind == .number
        default: return false
        }
    }

    /// A next value as a URL (absolute, or relative and resolved against `base`) or a cursor.
    package static func classify(_ text: String, base: String) -> NextTarget {
        let lower = text.prefix(8).lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") { return .url(text) }
        if text.hasPrefix("/") || text.hasPrefix("?") || text.hasPrefix("./") || text.hasPrefix("../") {
            return .url(resolve(text, base: base))
        }
        return .cursor(text)
    }

    /// `text` resolved against `base`, as a browser resolves a link.
    static func resolve(_ text: String, base: String) -> String {
        URL(string: text, relativeTo: URL(string: base))?.absoluteString ?? text
    }

    static func looksLikeHTML(_ response: HTTPResponse) -> Bool {
        if let type = response.headers["content-type"], type.lowercased().contains("html") { return true }
        let prefix = response.body.prefix(64).drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        return prefix.first == UInt8(ascii: "<")
    }

    /// For an XML job, whose bodies start with `<` too: an HTML content type, or a body
    /// opening with `<!doctype html` or `<html`.
    static func looksLikeHTMLPage(_ response: HTTPResponse) -> Bool {
        if let type = response.headers["content-type"], type.lowercased().contains("html") { return true }
        let prefix = String(decoding: response.body.prefix(64), as: UTF8.self).drop { $0.isWhitespace }.lowercased()
        return prefix.hasPrefix("<!doctype html") || prefix.hasPrefix("<html")
    }

    static func statusProblem(_ response: HTTPResponse, redactor: Redactor) -> String {
        let reason = HTTPResponseStatus(statusCode: response.status).reasonPhrase
        let problem = reason.isEmpty || reason.hasPrefix("unknown") ? "unexpected status" : "unexpected status (\(reason.lowercased()))"
        // What the server said about it, unless it is a web page.
        guard !looksLikeHTML(response), let said = errorText(response.body, redactor: redactor) else { return problem }
        return problem + ": " + said
    }

    /// The start of an error body as one line of text: secrets masked before anything is
    /// cut (a cut secret would no longer be recognised), whitespace and control characters
    /// as single spaces, at most 200 characters; nil when nothing is left.
    static func errorText(_ body: [UInt8], redactor: Redactor) -> String? {
        var text = ""
        var space = false
        for character in redactor.redact(String(decoding: body.prefix(1 << 16), as: UTF8.self)) {
            if character.isWhitespace || character.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                space = !text.isEmpty
                continue
            }
            if text.count + (space ? 1 : 0) >= 200 {
                return text + "…"
            }
            if space {
                text.append(" ")
                space = false
            }
            text.append(character)
        }
        return text.isEmpty ? nil : text
    }
}
