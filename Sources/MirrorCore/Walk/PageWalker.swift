import Foundation
import Logging
import NIOHTTP1

/// Why a walk ended.
public enum StopReason: Sendable, Equatable, CustomStringConvertible {
    case emptyPage(page: Int)
    case knownPage(page: Int)
    case status(Int, page: Int)
    case lastPage(page: Int)
    case total(Int, page: Int)
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

    /// The page the walk ended on, when one ended it.
    public var page: Int? {
        switch self {
        case let .emptyPage(page), let .knownPage(page), let .status(_, page), let .lastPage(page), let .total(_, page),
             let .endOfPages(page), let .noNextPage(page):
            return page
        case .singlePage, .maxPages, .failed:
            return nil
        }
    }

    public var description: String {
        switch self {
        case let .emptyPage(page): return "empty page \(page)"
        case let .knownPage(page): return "page \(page) held only known ids"
        case let .status(status, page): return "HTTP \(status) on page \(page)"
        case let .lastPage(page): return "last page \(page) reached"
        case let .total(total, page): return "all \(total) records walked at page \(page)"
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

/// An id listed more than once in one page.
public struct RepeatedID: Sendable, Equatable {
    public let page: Int
    public let id: String
    /// Where it appears in the page's records array.
    public let indexes: [Int]
}

/// A response that failed a walk: nothing of it was stored.
public struct PageFailure: Sendable, Equatable {
    public let page: Int
    public let method: String
    /// Redacted.
    public let url: String
    public let status: Int?
    public let problem: String

    /// `GET https://…?key=REDACTED: HTTP 200: response is not JSON: …`
    public var description: String {
        "\(method) \(url): \(status.map { "HTTP \($0)" } ?? "no response"): \(problem)"
    }
}

/// The last page a response named (`stop.last_page`).
public struct AnnouncedLastPage: Sendable, Equatable {
    public let page: Int
    public let last: Int
}

/// The count of records in the whole walk that a response named (`stop.total`).
public struct AnnouncedTotal: Sendable, Equatable {
    public let page: Int
    public let total: Int
}

/// A `stop.last_page` or `stop.total` value a response did not give as a whole number.
public struct UnreadableValue: Sendable, Equatable {
    public enum Key: Sendable, Equatable { case lastPage, total }

    public let page: Int
    public let key: Key
    public let message: String
}

/// What a job's walk did.
public struct WalkResult: Sendable {
    public var stop: StopReason = .failed
    /// Pages walked: fetched, answered 304, or skipped by `refresh_after`.
    public var pages = 0
    /// Pages the server answered 304 Not Modified: replayed from the stored copy.
    public var pagesNotModified = 0
    /// Pages not requested because they were fetched within `refresh_after`.
    public var pagesSkipped = 0
    public var counts = CommitCounts()
    public var rejected: [RejectedRecord] = []
    /// Ids repeated within a page (each stored once).
    public var repeated: [RepeatedID] = []
    /// Every `stop.last_page` value the walk's responses gave.
    public var announcedLast: [AnnouncedLastPage] = []
    /// Every `stop.total` value the walk's responses gave.
    public var announcedTotals: [AnnouncedTotal] = []
    /// Configured `stop` paths a response did not answer with a whole number.
    public var unreadable: [UnreadableValue] = []
    /// Entries of the records arrays walked, rejected ones included; a resumed walk
    /// counts the records stored before it resumed.
    public var elementsWalked = 0
    /// A cursor or next URL seen twice: what was seen.
    public var loop: String?
    /// The page whose response failed the walk, and why.
    public var failure: PageFailure?
    public var retries = 0
    /// Response bytes received for the pages of this walk.
    public var bytes = 0
    /// The page a resumed walk started at.
    public var resumedAt: Int?
    /// Page values stored, first and last.
    public var firstStored: Int?
    public var lastStored: Int?
    public var error: String?

    public var pagesFetched: Int { pages - pagesNotModified - pagesSkipped }
}

/// Walks one job's pages in order and commits each page as it arrives. A `{page}` walk
/// keeps up to `concurrency` requests in flight; a cursor or next-URL walk learns each
/// request from the previous response, so it fetches one page ahead at most.
public struct PageWalker: Sendable {
    public let job: JobSpec
    public let store: any PageStore
    public let client: HTTPClient
    public let maxPages: Int?
    /// Ignore `refresh_after` and send no validators: every page is fetched whole.
    public let refresh: Bool
    public let retry: RetryPolicy
    public let limiter: RateLimiter
    public let logger: Logger
    public let progress: ProgressHandler?
    /// Takes the files of each stored page.
    public let downloader: Downloader?
    let sender: RetryingSender

    public init(job: JobSpec, store: any PageStore, client: HTTPClient, maxPages: Int?, refresh: Bool = false,
                retry: RetryPolicy, limiter: RateLimiter, logger: Logger, progress: ProgressHandler? = nil,
                downloader: Downloader? = nil) {
        self.progress = progress
        self.downloader = downloader
        self.limiter = limiter
        self.job = job
        self.store = store
        self.client = client
        self.maxPages = maxPages
        self.refresh = refresh
        self.retry = retry
        self.logger = logger
        sender = RetryingSender(job: job, limiter: limiter, policy: retry, logger: logger)
    }

    /// A problem with one response: the page is not stored.
    struct PageFault: Error, Sendable {
        let url: RedactedURL
        let status: Int?
        let problem: String
    }

    /// Requests started ahead of the page being stored.
    struct InFlight {
        /// `{page}` walks.
        var window: PageWindow?
        /// Cursor and next-URL walks: the next page, fetched while this one is stored.
        /// Known by URL and cursor: a cursor may travel in a POST body, not in the URL.
        var prefetched: (url: RedactedURL, cursor: String?, task: Task<FetchOutcome, Never>)?

        /// Cancels what the walk will not use and waits for it, so that no request
        /// outlives the walk.
        mutating func drain() async {
            await window?.close()
            if let prefetched {
                prefetched.task.cancel()
                _ = await prefetched.task.value
            }
            prefetched = nil
        }
    }

    public func walk(from start: WalkStart) async -> WalkResult {
        var inFlight = InFlight()
        let result = await walk(from: start, inFlight: &inFlight)
        await inFlight.drain()
        return result
    }

    private func walk(from start: WalkStart, inFlight: inout InFlight) async -> WalkResult {
        var result = WalkResult()
        var logger = logger
        logger[metadataKey: "job"] = "\(job.name)"
        var page = start.page ?? job.pages.from
        // The checkpoint writes secrets as `${NAME}`.
        var cursor = start.cursor.map(job.redactor.expand)
        var nextURL = start.nextURL.map { RedactedURL(real: job.redactor.expand($0), redactor: job.redactor) }
        if start.isResumed {
            result.resumedAt = page
            logger.info("resuming the walk", metadata: ["page": "\(page)"])
        }
        var seenNext: Set<ExactText> = []
        // A next URL or cursor that leads back to where the walk started is a loop too.
        if job.next != nil {
            if let nextURL {
                seenNext.insert(ExactText("url " + nextURL.real))
            } else if let cursor {
                seenNext.insert(ExactText("cursor " + cursor))
            } else {
                seenNext.insert(ExactText("url " + job.url.url(page: page, cursor: nil, redactor: job.redactor).real))
            }
        }
        var position = start.position
        let singlePage = job.next == nil && !job.url.usesPage && !(job.body?.json.contains("{page}") ?? false)
        // `{page}` walks know every request in advance: a window of them is in flight.
        let windowed = job.next == nil && !singlePage
        let step = job.pages.step
        // The last page (`stop.last_page`) and the records the whole walk holds
        // (`stop.total`), as the latest response that gave them announced them.
        var lastAnnounced: Int?
        var announcedTotal: Int?
        result.elementsWalked = start.position
        // A replayed page whose records are gone is fetched again, whole.
        var fetchWhole: RedactedURL?
        let walker = self
        if windowed {
            // Nothing is requested past `pages.to` or `--max-pages`.
            var limit = job.pages.to ?? .max
            if let maxPages {
                let (span, overflow) = max(0, maxPages - 1).multipliedReportingOverflow(by: step)
                let (last, beyond) = page.addingReportingOverflow(span)
                if !overflow, !beyond { limit = min(limit, last) }
            }
            // With one request at a time, the next starts only once the walk has seen
            // this response: none is made past the end.
            let job = job
            inFlight.window = PageWindow(width: job.concurrency, step: step, head: page, limit: limit,
                                         chained: job.concurrency > 1) { target in
                await walker.fetch(job.url.url(page: target, cursor: nil, redactor: job.redactor), page: target, cursor: nil)
            }
        }

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
                if let whole = fetchWhole, whole == url {
                    fetchWhole = nil
                    outcome = await fetch(url, page: page, cursor: cursor, replay: false)
                } else if windowed {
                    inFlight.window?.advance(to: page)
                    for ahead in 0..<job.concurrency {
                        inFlight.window?.launch(page + ahead * step)
                    }
                    if let task = inFlight.window?.take(page) {
                        outcome = await task.value
                    } else {
                        outcome = await fetch(url, page: page, cursor: cursor)
                    }
                } else if let prefetched = inFlight.prefetched, prefetched.url == url, prefetched.cursor == cursor {
                    inFlight.prefetched = nil
                    outcome = await prefetched.task.value
                } else {
                    // A prefetch for another target is not wanted: no request outlives its use.
                    if let stale = inFlight.prefetched {
                        stale.task.cancel()
                        _ = await stale.task.value
                        inFlight.prefetched = nil
                    }
                    outcome = await fetch(url, page: page, cursor: cursor)
                }
                result.retries += outcome.retries
                let served: ServedPage
                switch try outcome.result.get() {
                case let .stopStatus(status):
                    result.stop = .status(status, page: page)
                    return result
                case let .page(page):
                    served = page
                }

                if job.stop.lastPage != nil, let last = served.lastPage {
                    // Nothing past the last page a response announced is requested.
                    lastAnnounced = last
                    inFlight.window?.announce(last)
                    result.announcedLast.append(AnnouncedLastPage(page: page, last: last))
                }
                if job.stop.total != nil, let total = served.total {
                    announcedTotal = total
                    result.announcedTotals.append(AnnouncedTotal(page: page, total: total))
                }
                result.unreadable += served.unreadable.map { UnreadableValue(page: page, key: $0.key, message: $0.message) }
                if served.elementCount == 0 && job.stop.empty {
                    result.count(served)
                    result.stop = .emptyPage(page: page)
                    return result
                }

                // Where the walk goes next, decided before the commit so it is checkpointed.
                var stop: StopReason?
                var loop: String?
                var nextCursor: String?
                var followURL: RedactedURL?
                if job.next != nil {
                    switch served.next {
                    case .none:
                        stop = .noNextPage(page: page)
                    case let .url(text):
                        let candidate = RedactedURL(real: text, redactor: job.redactor)
                        if !seenNext.insert(ExactText("url " + text)).inserted {
                            loop = "next URL \(candidate) seen twice"
                        }
                        followURL = candidate
                    case let .cursor(text):
                        if !seenNext.insert(ExactText("cursor " + text)).inserted {
                            loop = "cursor '\(job.redactor.redact(text))' seen twice"
                        }
                        nextCursor = text
                    }
                } else if singlePage {
                    stop = .singlePage
                }
                if job.stop.lastPage != nil, let last = lastAnnounced, stop == nil, page >= last {
                    stop = .lastPage(page: page)
                }
                if stop == nil, let total = announcedTotal, result.elementsWalked + served.elementCount >= total {
                    stop = .total(total, page: page)
                }
                if stop == nil, let to = job.pages.to, page + step > to {
                    stop = .endOfPages(page: page)
                }

                // Keep requests in flight while this page is written. With `stop.known` the
                // next request hangs on this commit: only a window wider than one guesses.
                if stop == nil, loop == nil, result.pages + 1 < (maxPages ?? .max) {
                    if windowed {
                        if !job.stop.known || job.concurrency > 1 {
                            inFlight.window?.launch(page + job.concurrency * step)
                        }
                    } else if !job.stop.known {
                        let nextPageURL = followURL ?? job.url.url(page: page + step, cursor: nextCursor, redactor: job.redactor)
                        if inFlight.prefetched?.url != nextPageURL || inFlight.prefetched?.cursor != nextCursor {
                            let nextPage = page + step
                            let prefetchCursor = nextCursor
                            inFlight.prefetched = (nextPageURL, prefetchCursor, Task {
                                await walker.fetch(nextPageURL, page: nextPage, cursor: prefetchCursor)
                            })
                        }
                    }
                }
                let counts: CommitCounts
                do {
                    counts = try await commit(served, url: url, page: page, position: position, nextPage: stop == nil ? page + step : nil,
                                        nextURL: followURL.map { job.redactor.placeholders($0.real) ?? $0.description },
                                        nextCursor: nextCursor.map { job.redactor.placeholders($0) ?? job.redactor.redact($0) })
                } catch let missing as ReplayMissingRecords {
                    logger.info("stored copy lacks records: fetching the page whole", metadata: [
                        "page": "\(page)", "url": "\(url)", "missing": "\(missing.missing)",
                    ])
                    fetchWhole = url
                    seenNext.remove(ExactText(followURL.map { "url " + $0.real } ?? nextCursor.map { "cursor " + $0 } ?? ""))
                    continue
                } catch {
                    throw PageFault(url: url, status: served.status, problem: "cannot store the page: \(error)")
                }
                result.count(served)
                downloader?.enqueue(counts.pendingFiles)
                position += served.recordCount
                result.counts.new += counts.new
                result.counts.updated += counts.updated
                result.counts.unchanged += counts.unchanged
                result.firstStored = result.firstStored ?? page
                result.lastStored = page
                progress?(JobProgress(job: job.name, state: .running, page: page, lastPage: job.pages.to, walk: result,
                                      files: downloader?.summary))
                logger.debug("page stored", metadata: [
                    "page": "\(page)", "url": "\(url)", "origin": "\(served.origin)", "records": "\(served.recordCount)",
                    "new": "\(counts.new)",
                ])

                if let loop {
                    result.loop = loop
                    result.error = "job '\(job.name)': \(job.method.rawValue) \(url): loop: \(loop); \(keptText(result))"
                    return result
                }
                if stop == nil, job.stop.known, served.recordCount > 0, counts.new == 0 {
                    stop = .knownPage(page: page)
                }
                if let stop {
                    result.stop = stop
                    return result
                }
                page += step
                cursor = nextCursor
                nextURL = followURL
            } catch let fault as PageFault {
                // What went wrong may quote the server or the client library: mask any secret in it.
                let problem = job.redactor.redact(fault.problem)
                result.failure = PageFailure(page: page, method: job.method.rawValue, url: fault.url.description,
                                             status: fault.status, problem: problem)
                let status = fault.status.map { "HTTP \($0)" } ?? "no response"
                let kept = keptText(result)
                result.error = "job '\(job.name)': \(job.method.rawValue) \(fault.url): \(status): \(problem); page \(page) not stored, \(kept)"
                return result
            } catch {
                result.error = job.redactor.redact("job '\(job.name)': \(error)")
                return result
            }
        }
    }

    /// Stores a fetched page, or sees a replayed one again; the checkpoint moves past it.
    private func commit(_ served: ServedPage, url: RedactedURL, page: Int, position: Int, nextPage: Int?,
                        nextURL: String?, nextCursor: String?) async throws -> CommitCounts {
        let time = Timestamp.string(Date())
        switch served.content {
        case let .fresh(bytes, records):
            return try await store.commit(PageCommit(
                job: job.name, account: job.account, table: job.table, url: url, requestBody: served.requestBody,
                page: page, status: served.status, etag: served.etag, lastModified: served.lastModified,
                responseBytes: served.responseBytes, bytes: bytes, records: records, elements: served.elementCount,
                lastPage: served.lastPage, total: served.total, files: served.files, onChange: job.onChange, firstPosition: position,
                nextPage: nextPage, nextURL: nextURL, nextCursor: nextCursor, time: time))
        case let .stored(stored):
            let revalidated = served.origin == .notModified ? (served.etag, served.lastModified) : nil
            return try await store.replay(PageReplay(
                job: job.name, account: job.account, table: job.table, stored: stored, firstPosition: position,
                revalidated: revalidated, nextPage: nextPage, nextURL: nextURL, nextCursor: nextCursor, time: time))
        }
    }

    /// `pages 1-6 kept`, `page 1 kept` or `nothing stored`.
    private func keptText(_ result: WalkResult) -> String {
        guard let first = result.firstStored, let last = result.lastStored else { return "nothing stored" }
        return first == last ? "page \(first) kept" : "pages \(first)-\(last) kept"
    }

    // MARK: One response

    enum Fetched: Sendable {
        /// A status listed in `stop.status`.
        case stopStatus(Int)
        case page(ServedPage)
    }

    struct FetchOutcome: Sendable {
        var result: Result<Fetched, PageFault>
        var retries: Int
    }

    /// Requests one page (retrying as the policy says) and parses it; nothing is stored
    /// here. With `replay`, a page fetched within `refresh_after` is not requested, and
    /// the stored validators are sent so that a 304 replays the stored copy.
    func fetch(_ url: RedactedURL, page: Int, cursor: String?, replay: Bool = true) async -> FetchOutcome {
        let body = job.body?.render(page: page, cursor: cursor)
        let shownBody = body.map { job.redactor.redact(String(decoding: $0, as: UTF8.self)) } ?? ""
        var stored: StoredPage?
        if replay, !refresh, let copy = try? await store.storedPage(job: job.name, account: job.account, url: url.description,
                                                              requestBody: shownBody),
           copy.isReplayable, (200..<300).contains(copy.status) {
            stored = copy
        }
        if let stored, let refreshAfter = job.refreshAfter,
           stored.fetchedAt > Timestamp.string(Date().addingTimeInterval(-refreshAfter)) {
            return FetchOutcome(result: .success(.page(ServedPage(stored, origin: .skipped, etag: nil, lastModified: nil,
                                                                         redactor: job.redactor))),
                                retries: 0)
        }
        var headers = job.headers
        if let etag = stored?.etag { headers.append(("If-None-Match", etag)) }
        if let lastModified = stored?.lastModified { headers.append(("If-Modified-Since", lastModified)) }
        let request = HTTPRequest(method: job.method.rawValue, url: url, headers: headers, body: body,
                                  timeout: job.timeout, maxBytes: job.maxPageSize, redactor: job.redactor)
        let stopStatuses = job.stop.statuses
        let sent = await sender.send(url, retryable: { (response: HTTPResponse) in
            stopStatuses.contains(response.status) || !RetryPolicy.isRetryable(status: response.status)
                ? nil : RetryingSender.Retryable(status: response.status, retryAfter: response.headers["retry-after"])
        }, exchange: { () throws(HTTPError) in try await client.send(request) })
        var result: Result<Fetched, PageFault>
        switch sent.result {
        case let .failure(error):
            return FetchOutcome(result: .failure(PageFault(url: url, status: error.status, problem: error.reason + sent.afterRetries)),
                                retries: sent.retries)
        case let .success(response):
            if response.status == 304, let stored {
                result = .success(.page(ServedPage(stored, origin: .notModified, etag: response.headers["etag"],
                                                   lastModified: response.headers["last-modified"], redactor: job.redactor)))
            } else {
                result = check(response, url: url, page: page, requestBody: shownBody)
            }
        }
        if case let .failure(fault) = result {
            result = .failure(PageFault(url: fault.url, status: fault.status, problem: fault.problem + sent.afterRetries))
        }
        return FetchOutcome(result: result, retries: sent.retries)
    }

    /// Turns a final response into a parsed page, a clean stop or a fault.
    private func check(_ response: HTTPResponse, url: RedactedURL, page: Int, requestBody: String) -> Result<Fetched, PageFault> {
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
                let found = value.map { "\($0.kind)" } ?? "nothing"
                rejected.append(RejectedRecord(page: page, index: index,
                                               reason: "record \(index) has no usable id at '\(job.id)' (found \(found))"))
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
        let reason = HTTPResponseStatus(statusCode: response.status).reasonPhrase
        return reason.isEmpty || reason.hasPrefix("unknown") ? "unexpected status" : "unexpected status (\(reason.lowercased()))"
    }
}

/// One page as the walk sees it: parsed from a response, or replayed from the stored
/// copy (a 304, or a page within `refresh_after`).
struct ServedPage: Sendable {
    enum Origin: Sendable, CustomStringConvertible {
        case fetched, notModified, skipped
        var description: String {
            switch self {
            case .fetched: return "fetched"
            case .notModified: return "not modified"
            case .skipped: return "skipped (refresh_after)"
            }
        }
    }

    enum Content: Sendable {
        /// The compacted response and its records.
        case fresh(bytes: [UInt8], records: [PageCommit.Record])
        case stored(StoredPage)
    }

    let origin: Origin
    let content: Content
    let requestBody: String
    let status: Int
    let etag: String?
    let lastModified: String?
    let responseBytes: Int
    let elementCount: Int
    let recordCount: Int
    let rejected: [RejectedRecord]
    let repeated: [RepeatedID]
    /// URLs of the files the page's records point to.
    let files: [RedactedURL]
    let next: PageWalker.NextTarget
    let lastPage: Int?
    let total: Int?
    /// Configured `stop` paths this response did not answer with a whole number.
    let unreadable: [(key: UnreadableValue.Key, message: String)]
}

extension ServedPage {
    /// The stored copy served again. Its next target was stored with its secrets as
    /// `${NAME}` (or masked, and then it is not replayable).
    init(_ stored: StoredPage, origin: Origin, etag: String?, lastModified: String?, redactor: Redactor) {
        let next: PageWalker.NextTarget
        if let url = stored.nextURL {
            next = .url(redactor.expand(url))
        } else if let cursor = stored.nextCursor {
            next = .cursor(redactor.expand(cursor))
        } else {
            next = .none
        }
        self.init(origin: origin, content: .stored(stored), requestBody: stored.requestBody, status: stored.status,
                  etag: etag, lastModified: lastModified, responseBytes: 0, elementCount: stored.elements,
                  recordCount: stored.ids.count, rejected: [], repeated: [], files: [], next: next,
                  lastPage: stored.lastPage, total: stored.total, unreadable: [])
    }
}

extension WalkResult {
    mutating func count(_ served: ServedPage) {
        pages += 1
        elementsWalked += served.elementCount
        bytes += served.responseBytes
        rejected += served.rejected
        repeated += served.repeated
        switch served.origin {
        case .fetched: break
        case .notModified: pagesNotModified += 1
        case .skipped: pagesSkipped += 1
        }
    }
}
