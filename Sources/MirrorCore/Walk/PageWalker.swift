import Foundation
import Logging
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Why a walk ended.
public enum StopReason: Sendable, Equatable, CustomStringConvertible {
    case emptyPage(page: Int)
    case knownPage(page: Int)
    case status(Int, page: Int)
    case lastPage(page: Int)
    case endOfPages(page: Int)
    case noNextPage(page: Int)
    case singlePage
    case maxPages(Int)
    case failed

    /// A walk that ended on a stop condition or at `pages.to` saw everything (SPEC §5).
    public var isComplete: Bool {
        switch self {
        case .maxPages, .failed: return false
        default: return true
        }
    }

    public var description: String {
        switch self {
        case let .emptyPage(page): return "empty page \(page)"
        case let .knownPage(page): return "page \(page) held only known ids"
        case let .status(status, page): return "HTTP \(status) on page \(page)"
        case let .lastPage(page): return "last page \(page) reached"
        case let .endOfPages(page): return "pages.to reached at page \(page)"
        case let .noNextPage(page): return "no next page after page \(page)"
        case .singlePage: return "single page"
        case let .maxPages(count): return "--max-pages \(count) reached"
        case .failed: return "failed"
        }
    }
}

/// A record the walk could not store.
public struct RejectedRecord: Sendable, Equatable {
    public let page: Int
    public let index: Int
    public let reason: String
}

/// What a job's walk did.
public struct WalkResult: Sendable {
    public var stop: StopReason = .failed
    public var pages = 0
    public var counts = CommitCounts()
    public var rejected: [RejectedRecord] = []
    /// Page values stored, first and last.
    public var retries = 0
    /// Response bytes received for the pages of this walk.
    public var bytes = 0
    /// The page a resumed walk started at.
    public var resumedAt: Int?
    public var firstStored: Int?
    public var lastStored: Int?
    public var error: String?
}

/// Walks one job's pages in order and commits each page as it arrives.
public struct PageWalker: Sendable {
    public let job: JobSpec
    public let store: TableStore
    public let client: HTTPClient
    public let maxPages: Int?
    public let retry: RetryPolicy
    public let limiter: RateLimiter
    public let logger: Logger

    public init(job: JobSpec, store: TableStore, client: HTTPClient, maxPages: Int?, retry: RetryPolicy,
                limiter: RateLimiter, logger: Logger) {
        self.limiter = limiter
        self.job = job
        self.store = store
        self.client = client
        self.maxPages = maxPages
        self.retry = retry
        self.logger = logger
    }

    /// A problem with one response: the page is not stored.
    struct PageFault: Error, Sendable {
        let url: RedactedURL
        let status: Int?
        let problem: String
    }

    public func walk(from start: WalkStart) async -> WalkResult {
        var result = WalkResult()
        var logger = logger
        logger[metadataKey: "job"] = "\(job.name)"
        var page = start.page ?? job.pages.from
        var cursor = start.cursor
        var nextURL = start.nextURL.map { RedactedURL(real: $0, redactor: job.redactor) }
        if start.isResumed {
            result.resumedAt = page
            logger.info("resuming the walk", metadata: ["page": "\(page)"])
        }
        var seenNext: Set<String> = []
        var position = start.position
        var prefetched: (url: RedactedURL, task: Task<FetchOutcome, Never>)?
        defer { prefetched?.task.cancel() }
        let singlePage = job.next == nil && !job.url.usesPage && !(job.body?.json.contains("{page}") ?? false)

        while true {
            if let maxPages, result.pages >= maxPages {
                result.stop = .maxPages(maxPages)
                return result
            }
            if Task.isCancelled {
                result.error = "cancelled"
                return result
            }
            let url = nextURL ?? job.url.url(page: page, cursor: cursor, redactor: job.redactor)
            do {
                let outcome: FetchOutcome
                if let prefetched, prefetched.url == url {
                    outcome = await prefetched.task.value
                } else {
                    outcome = await fetch(url, page: page, cursor: cursor)
                }
                prefetched = nil
                result.retries += outcome.retries
                let fetched = try outcome.result.get()
                let response: HTTPResponse
                let parsed: ParsedPage
                switch fetched {
                case let .stopStatus(status):
                    result.stop = .status(status, page: page)
                    return result
                case let .page(pageResponse, pageParsed):
                    response = pageResponse
                    parsed = pageParsed
                }
                result.pages += 1
                result.bytes += response.body.count
                result.rejected += parsed.rejected

                if parsed.elementCount == 0 && job.stop.empty {
                    result.stop = .emptyPage(page: page)
                    return result
                }

                // Where the walk goes next, decided before the commit so it is checkpointed.
                var stop: StopReason?
                var loop: String?
                var nextCursor: String?
                var followURL: RedactedURL?
                if let next = job.next {
                    switch Self.nextTarget(next, document: parsed.document, response: response, url: url) {
                    case .none:
                        stop = .noNextPage(page: page)
                    case let .url(text):
                        let candidate = RedactedURL(real: text, redactor: job.redactor)
                        if !seenNext.insert("url " + text).inserted {
                            loop = "next URL \(candidate) seen twice"
                        }
                        followURL = candidate
                    case let .cursor(text):
                        if !seenNext.insert("cursor " + text).inserted {
                            loop = "cursor '\(job.redactor.redact(text))' seen twice"
                        }
                        nextCursor = text
                    }
                } else if singlePage {
                    stop = .singlePage
                }
                if stop == nil, let lastPath = job.stop.lastPage,
                   let last = parsed.document.root.value(at: lastPath)?.intValue, page >= last {
                    stop = .lastPage(page: page)
                }
                if stop == nil, let to = job.pages.to, page + job.pages.step > to {
                    stop = .endOfPages(page: page)
                }

                // The next request is certain once the stop decision does not hang on this
                // commit: fetch and parse it while this page is written.
                if stop == nil, loop == nil, !job.stop.known, result.pages < (maxPages ?? .max) {
                    let nextPageURL = followURL ?? job.url.url(page: page + job.pages.step, cursor: nextCursor, redactor: job.redactor)
                    let nextPage = page + job.pages.step
                    let walker = self
                    let prefetchCursor = nextCursor
                    prefetched = (nextPageURL, Task { await walker.fetch(nextPageURL, page: nextPage, cursor: prefetchCursor) })
                }
                let commit = PageCommit(
                    job: job.name, account: job.account, table: job.table, url: url, page: page,
                    status: response.status, etag: response.headers["etag"],
                    lastModified: response.headers["last-modified"], responseBytes: response.body.count,
                    bytes: parsed.document.bytes, records: parsed.records, onChange: job.onChange,
                    firstPosition: position, nextPage: stop == nil ? page + job.pages.step : nil,
                    nextURL: followURL?.description, nextCursor: nextCursor.map(job.redactor.redact),
                    time: Timestamp.string(Date()))
                let counts: CommitCounts
                do {
                    counts = try store.commit(commit)
                } catch {
                    throw PageFault(url: url, status: response.status, problem: "cannot store the page: \(error)")
                }
                position += parsed.records.count
                result.counts.new += counts.new
                result.counts.updated += counts.updated
                result.counts.unchanged += counts.unchanged
                result.firstStored = result.firstStored ?? page
                result.lastStored = page
                logger.debug("page stored", metadata: [
                    "page": "\(page)", "url": "\(url)", "records": "\(parsed.records.count)", "new": "\(counts.new)",
                ])

                if let loop {
                    result.error = "job '\(job.name)': \(job.method.rawValue) \(url): loop: \(loop); pages \(rangeText(result)) kept"
                    return result
                }
                if stop == nil, job.stop.known, !parsed.records.isEmpty, counts.new == 0 {
                    stop = .knownPage(page: page)
                }
                if let stop {
                    result.stop = stop
                    return result
                }
                page += job.pages.step
                cursor = nextCursor
                nextURL = followURL
            } catch let fault as PageFault {
                let status = fault.status.map { "HTTP \($0)" } ?? "no response"
                let kept = result.lastStored == nil ? "nothing stored" : "pages \(rangeText(result)) kept"
                result.error = "job '\(job.name)': \(job.method.rawValue) \(fault.url): \(status): \(fault.problem); page \(page) not stored, \(kept)"
                return result
            } catch {
                result.error = "job '\(job.name)': \(error)"
                return result
            }
        }
    }

    private func rangeText(_ result: WalkResult) -> String {
        guard let first = result.firstStored, let last = result.lastStored else { return "none" }
        return first == last ? "\(first)" : "\(first)-\(last)"
    }

    // MARK: One response

    enum Fetched: Sendable {
        /// A status listed in `stop.status`.
        case stopStatus(Int)
        case page(HTTPResponse, ParsedPage)
    }

    struct FetchOutcome: Sendable {
        var result: Result<Fetched, PageFault>
        var retries: Int
    }

    /// Requests one page (retrying as the policy says) and parses it; nothing is stored here.
    func fetch(_ url: RedactedURL, page: Int, cursor: String?) async -> FetchOutcome {
        let request = HTTPRequest(
            method: job.method.rawValue, url: url, headers: job.headers,
            body: job.body?.render(page: page, cursor: cursor), timeout: job.timeout)
        var attempt = 0
        while true {
            let response: HTTPResponse
            do {
                if let limit = job.rateLimit {
                    _ = try? await limiter.acquire(host: url.host, limit: limit)
                }
                response = try await client.send(request)
            } catch {
                if attempt < job.retries, await pause(attempt: &attempt, url: url, status: nil, retryAfter: nil) { continue }
                let problem = error.reason + Self.afterRetries(attempt)
                return FetchOutcome(result: .failure(PageFault(url: url, status: nil, problem: problem)), retries: attempt)
            }
            if !job.stop.statuses.contains(response.status), RetryPolicy.isRetryable(status: response.status),
               attempt < job.retries,
               await pause(attempt: &attempt, url: url, status: response.status, retryAfter: response.headers["retry-after"]) {
                continue
            }
            var result = check(response, url: url, page: page)
            if attempt > 0, case let .failure(fault) = result {
                result = .failure(PageFault(url: fault.url, status: fault.status, problem: fault.problem + Self.afterRetries(attempt)))
            }
            return FetchOutcome(result: result, retries: attempt)
        }
    }

    static func afterRetries(_ count: Int) -> String {
        count == 0 ? "" : " (after \(count) \(count == 1 ? "retry" : "retries"))"
    }

    /// Sleeps before the next attempt; false if the walk was cancelled meanwhile.
    private func pause(attempt: inout Int, url: RedactedURL, status: Int?, retryAfter: String?) async -> Bool {
        attempt += 1
        let delay = retry.delay(attempt: attempt, retryAfter: retryAfter)
        logger.warning("retrying", metadata: [
            "job": "\(job.name)", "url": "\(url)", "http.status": "\(status.map(String.init) ?? "none")",
            "attempt": "\(attempt)", "delay": "\(String(format: "%.2f", delay))s",
        ])
        do {
            try await Task.sleep(for: .seconds(delay))
            return true
        } catch {
            return false
        }
    }

    /// Turns a final response into a parsed page, a clean stop or a fault.
    private func check(_ response: HTTPResponse, url: RedactedURL, page: Int) -> Result<Fetched, PageFault> {
        if job.stop.statuses.contains(response.status) {
            return .success(.stopStatus(response.status))
        }
        guard (200..<300).contains(response.status) else {
            return .failure(PageFault(url: url, status: response.status, problem: Self.statusProblem(response)))
        }
        do {
            return .success(.page(response, try parse(response, url: url, page: page)))
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
        var lastIndex: [String: Int] = [:]
        lastIndex.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            let value = element.value(at: job.id)
            var id: String?
            if let value, value.kind == .string || value.kind == .number, let text = value.scalarText, !text.isEmpty {
                id = text
            }
            if let id {
                lastIndex[id] = index
            } else {
                let found = value.map { "\($0.kind)" } ?? "nothing"
                rejected.append(RejectedRecord(page: page, index: index,
                                               reason: "record \(index) has no usable id at '\(job.id)' (found \(found))"))
            }
            ids.append(id)
        }
        var records: [PageCommit.Record] = []
        records.reserveCapacity(lastIndex.count)
        for (index, element) in elements.enumerated() {
            guard let id = ids[index], lastIndex[id] == index else { continue }
            records.append(PageCommit.Record(id: id, range: element.byteRange))
        }
        return ParsedPage(document: document, elementCount: elements.count, records: records, rejected: rejected)
    }

    enum NextTarget: Equatable {
        case none
        case url(String)
        case cursor(String)
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
        let reason = HTTPURLResponse.localizedString(forStatusCode: response.status)
        return reason.isEmpty ? "unexpected status" : "unexpected status (\(reason.lowercased()))"
    }
}
