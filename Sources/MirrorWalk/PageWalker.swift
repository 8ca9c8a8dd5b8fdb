import Foundation
package import Logging
package import MirrorHTTP
package import MirrorModel

/// Walks one job's pages in order and commits each page as it arrives. A `{page}` walk
/// keeps up to `concurrency` requests in flight, ramping up to it as full pages come back
/// (see `PageWindow`); a cursor or next-URL walk learns each
/// request from the previous response, so it fetches one page ahead at most.
///
/// The walker only orders work: `WalkState` decides, `PageFetcher` fetches, the store
/// commits. Requests and commits are child tasks of one task group, so cancelling the
/// walk cancels every request in flight, and no request outlives the walk.
package struct PageWalker: Sendable {
    package let job: JobSpec
    package let store: any PageStore
    let fetcher: PageFetcher
    package let maxPages: Int?
    package let logger: Logger
    package let progress: ProgressHandler?
    /// Takes the files of each stored page.
    package let downloader: (any FileQueue)?
    /// Response bytes held for pages ahead of the one stored next (see `PageBudget`).
    package let pagesAhead: Int
    /// A child job's walk: the parent record it is for (see `PageCommit.parentID`).
    package let parentID: String?

    package init(job: JobSpec, store: any PageStore, client: HTTPClient, maxPages: Int?, refresh: Bool = false,
                retry: RetryPolicy, limiter: RateLimiter, quota: QuotaPacer, logger: Logger, progress: ProgressHandler? = nil,
                downloader: (any FileQueue)? = nil, pagesAhead: Int? = nil, parentID: String? = nil) {
        var logger = logger
        logger[metadataKey: "job"] = "\(job.name)"
        self.job = job
        self.store = store
        self.maxPages = maxPages
        self.logger = logger
        self.progress = progress
        self.downloader = downloader
        self.pagesAhead = pagesAhead ?? PageBudget.defaultLimit
        self.parentID = parentID
        fetcher = PageFetcher(job: job, store: store, client: client,
                              sender: RetryingSender(job: job, retries: Self.pageRetries(job), limiter: limiter, quota: quota,
                                                     policy: retry, logger: logger, clock: client.clock),
                              refresh: refresh, origin: job.origin)
    }

    /// A scroll moves on with every request it serves: asking again after a lost answer
    /// could skip a batch, so its pages are not retried.
    static func pageRetries(_ job: JobSpec) -> Int {
        job.next?.isScroll == true ? 0 : job.retries
    }

    /// What a child task of the walk reports.
    private enum Event: Sendable {
        case fetched(PageTarget, FetchOutcome)
        case stored(StoreOutcome)
    }

    private enum StoreOutcome: Sendable {
        case stored(CommitCounts)
        /// Pages stored in one commit (see `Held`).
        case storedTogether(PagesCommitted)
        /// A replayed page whose records are no longer all stored.
        case missingRecords(Int)
        case failed(String)
    }

    package func walk(from start: WalkStart) async -> WalkResult {
        var state = WalkState(job: job, start: start, maxPages: maxPages)
        if start.isResumed {
            logger.info("resuming the walk", metadata: ["page": "\(state.page)"])
        }
        let budget = PageBudget(head: state.page, limit: pagesAhead)
        var walkFetcher = self.fetcher
        walkFetcher.storedCopies = start.storedPages
        let fetcher = walkFetcher
        return await withTaskGroup(of: Event.self) { group in
            var window = state.isWindowed
                ? PageWindow(width: job.concurrency, step: job.pages.step, head: state.page, limit: state.pageLimit,
                             fullPage: job.stop.short, walked: start.position, usesTotal: job.stop.total != nil) : nil
            // Requests made and not answered yet; answers not used yet.
            var pending: Set<PageTarget> = []
            var arrived: [PageTarget: FetchOutcome] = [:]
            var storeOutcome: StoreOutcome?
            // Pages gone past, to be stored with the page after them, and where the walk
            // stood before the first of them.
            var held: [Held] = []
            var heldFrom: WalkState.Mark?

            func request(_ target: PageTarget) {
                guard arrived[target] == nil, pending.insert(target).inserted else { return }
                group.addTask { .fetched(target, await fetcher.fetch(target, budget: budget)) }
            }
            func handle(_ event: Event) {
                switch event {
                case let .fetched(target, outcome):
                    pending.remove(target)
                    arrived[target] = outcome
                    // An arriving full page hands its slot on at once.
                    var served: ServedPage?
                    if case let .success(.page(page)) = outcome.result { served = page }
                    let pages = window?.arrived(target.page, elements: served?.elementCount, announcing: served?.lastPage,
                                                total: served?.total) ?? []
                    for page in pages { request(state.windowTarget(page)) }
                case let .stored(outcome):
                    storeOutcome = outcome
                }
            }
            // A replayed page whose records are no longer all stored is fetched again whole.
            func refetch(_ lacking: PageStep, missing: Int) {
                logger.info("stored copy lacks records: fetching the page whole", metadata: [
                    "page": "\(lacking.target.page)", "url": "\(lacking.target.url.shortDescription)", "missing": "\(missing)",
                ])
                state.refetchWhole(lacking)
            }
            func wait(until done: () -> Bool) async {
                while !done(), let event = await group.next() {
                    handle(event)
                }
            }

            walking: while true {
                if Task.isCancelled {
                    // Pages gone past and not stored are not kept.
                    if let heldFrom { state.goBack(to: heldFrom) }
                    state.cancel()
                    break
                }
                guard let target = state.nextTarget() else { break }
                if !target.whole, let pages = window?.advance(to: target.page) {
                    for page in pages { request(state.windowTarget(page)) }
                }
                request(target)
                budget.moveHead(to: target.page)
                await wait { arrived[target] != nil }
                guard let outcome = arrived.removeValue(forKey: target) else {
                    state.cancel()
                    break
                }
                window?.take(target.page)
                state.fetched(retries: outcome.retries)
                let fetched: Fetched
                switch outcome.result {
                case let .failure(fault):
                    if Task.isCancelled { state.cancel() } else { state.fail(fault) }
                    break walking
                case let .success(value):
                    fetched = value
                }
                if case let .page(served) = fetched {
                    for warning in served.warnings {
                        logger.warning("GraphQL errors beside the data", metadata: ["page": "\(target.page)", "problem": "\(warning)"])
                    }
                }
                guard let step = state.decide(fetched, for: target) else {
                    if case let .page(served) = fetched, case let .fresh(_, envelope) = served.content, served.elementCount == 0 {
                        await keepEndPage(served, envelope: envelope, target: target)
                    }
                    break
                }
                if job.stop.announcesLastPage, let last = step.served.lastPage {
                    // Nothing past the last page a response announced is requested.
                    window?.announce(last)
                }
                // Keep requests in flight while this page is written.
                if state.mayFetchAhead(step), let next = step.next {
                    if window != nil {
                        for page in window?.fill(afterStoring: target.page) ?? [] { request(state.windowTarget(page)) }
                    } else {
                        request(next)
                    }
                }
                let position = state.position
                if state.mayMoveAhead(step), held.count + 1 < Self.heldPages,
                   held.reduce(step.served.responseBytes, { $0 + $1.step.served.responseBytes }) <= Self.heldBytes {
                    // When the next page is already here, this one waits to be stored with it.
                    let mark = state.movedAhead(past: step)
                    if Self.isHere(state.peekTarget().flatMap { arrived[$0] }) {
                        held.append(Held(step: step, position: position))
                        heldFrom = heldFrom ?? mark
                        continue
                    }
                    state.goBack(to: mark)
                }
                storeOutcome = nil
                if held.isEmpty {
                    group.addTask { .stored(await commit(step, position: position)) }
                } else {
                    let pages = held.map { ($0.step, $0.position) } + [(step, position)]
                    group.addTask { .stored(.storedTogether(await commit(pages))) }
                }
                await wait { storeOutcome != nil }
                budget.release(target.page)
                if case let .storedTogether(committed) = storeOutcome, let from = heldFrom {
                    let together = held
                    held = []
                    heldFrom = nil
                    // The walk goes back to the first page held and past each one stored, with
                    // its counts, as if each had been stored alone: each is reported.
                    state.goBack(to: from)
                    for (held, counts) in zip(together, committed.stored) {
                        budget.release(held.step.target.page)
                        stored(held.step, counts: counts)
                        let ended = state.stored(held.step, counts: counts)
                        assert(!ended, "a held page does not end the walk")
                        progress?(JobProgress(job: job.name, page: held.step.target.page, lastPage: job.pages.to,
                                              walk: state.result, files: downloader?.summary))
                    }
                    for page in together.dropFirst(committed.stored.count) { budget.release(page.step.target.page) }
                    // The first page not stored, when one was not.
                    let pages = together.map(\.step) + [step]
                    let notStored = pages.dropFirst(committed.stored.count).first
                    if let missing = committed.missingRecords, let notStored {
                        // As when stored alone; the pages after it are walked again.
                        for later in pages.dropFirst(committed.stored.count + 1) { state.forget(later) }
                        refetch(notStored, missing: missing)
                        continue
                    }
                    if let reason = committed.failure, let notStored {
                        state.failStoring(notStored, reason: reason)
                        break walking
                    }
                    storeOutcome = committed.stored.last.map { .stored($0) }
                }
                switch storeOutcome {
                case let .missingRecords(missing):
                    refetch(step, missing: missing)
                case let .failed(reason):
                    state.failStoring(step, reason: reason)
                    break walking
                case let .stored(counts):
                    stored(step, counts: counts)
                    let ended = state.stored(step, counts: counts)
                    progress?(JobProgress(job: job.name, page: target.page, lastPage: job.pages.to,
                                          walk: state.result, files: downloader?.summary))
                    if ended { break walking }
                case .storedTogether, nil:
                    state.cancel()
                    break walking
                }
            }
            // Requests made past the end are not wanted: their responses are dropped unread.
            group.cancelAll()
            state.finish()
            for missing in state.result.missingPaths {
                logger.warning("path not in the responses", metadata: ["problem": "\(missing)"])
            }
            return state.result
        }
    }

    /// Pages a commit stores at most, and their response bytes at most (see `Held`).
    static let heldPages = 16
    static let heldBytes = 16 << 20

    /// A page the walk went past before storing it, because the page after it was already
    /// here: the two are stored in one commit, and so on up to `heldPages`. Where one commit
    /// a page wrote about 28 database pages to the WAL, a commit for several writes the
    /// pages they share (the end of the table and of each index, the walk's row, the file's
    /// header) once. Only pages whose commit decides nothing are held (`WalkState.mayMoveAhead`).
    private struct Held {
        let step: PageStep
        let position: Int
    }

    /// Whether an answer already here continues the walk with a page of records to store,
    /// or a stored copy to see again.
    private static func isHere(_ outcome: FetchOutcome?) -> Bool {
        guard case let .success(.page(served))? = outcome?.result else { return false }
        switch served.content {
        case .fresh: return served.elementCount > 0
        case .stored: return true
        }
    }

    /// What follows a page's commit: its files are queued for download.
    private func stored(_ step: PageStep, counts: CommitCounts) {
        downloader?.enqueue(counts.pendingFiles)
        logger.debug("page stored", metadata: [
            "page": "\(step.target.page)", "url": "\(step.target.url.shortDescription)", "origin": "\(step.served.origin)",
            "records": "\(step.served.recordCount)", "new": "\(counts.new)",
        ])
    }

    /// A validator as it may be stored: a secret in it written as `${NAME}`; none when a
    /// secret is in it in a form `${NAME}` cannot stand for (then the page is fetched whole).
    private func storable(_ validator: String?) -> String? {
        validator.flatMap(job.redactor.placeholders)
    }

    /// The page's highest value of the `incremental` path, as the store keeps it.
    private func highWater(_ highest: SinceValue?) -> HighWater? {
        guard case .path? = job.incremental?.source, let highest else { return nil }
        return HighWater(value: highest)
    }

    /// The empty page that ended the walk, kept for `mirror serve` (a client walking the
    /// pages ends where the walk did). A failure to keep it fails nothing.
    private func keepEndPage(_ served: ServedPage, envelope: PageEnvelope, target: PageTarget) async {
        do {
            try await store.keepEndPage(EndPage(
                job: job.name, account: job.account, table: job.table, url: target.url, requestBody: served.requestBody,
                page: target.page, status: served.status, responseBytes: served.responseBytes, envelope: envelope,
                time: Timestamp.string(Date())))
        } catch {
            logger.warning("the empty last page could not be kept", metadata: ["page": "\(target.page)", "error": "\(error)"])
        }
    }

    /// What the store keeps of a fetched page.
    private func pageCommit(_ step: PageStep, records: PageRecords, envelope: PageEnvelope, position: Int,
                            time: String) -> PageCommit {
        let served = step.served
        return PageCommit(
            job: job.name, account: job.account, table: job.table, url: step.target.url,
            requestBody: served.requestBody, page: step.target.page, status: served.status,
            etag: storable(served.etag), lastModified: storable(served.lastModified), responseBytes: served.responseBytes, records: records,
            envelope: envelope,
            elements: served.elementCount, lastPage: served.lastPage, total: served.total, hasMore: served.hasMore,
            files: served.files,
            onChange: job.onChange, shared: job.shareTable, firstPosition: position, nextPage: step.nextPage, nextURL: step.nextURL,
            nextCursor: step.nextCursor, nextCursorIsNumber: step.nextCursorIsNumber, time: time, deleted: served.deleted,
            highWater: highWater(served.highest), parentID: parentID, children: job.children,
            mismatches: served.mismatches)
    }

    /// Stores pages in one commit (see `Held`): fetched ones, and stored copies seen again.
    private func commit(_ pages: [(PageStep, Int)]) async -> PagesCommitted {
        let time = Timestamp.string(Date())
        return await store.commit(pages.map { step, position in
            switch step.served.content {
            case let .fresh(records, envelope):
                .fresh(pageCommit(step, records: records, envelope: envelope, position: position, time: time))
            case let .stored(stored):
                .replay(pageReplay(step, stored: stored, position: position, time: time))
            }
        })
    }

    /// What the store sees again of a stored copy: a 304 refreshes its validators.
    private func pageReplay(_ step: PageStep, stored: StoredPage, position: Int, time: String) -> PageReplay {
        let served = step.served
        let revalidated = served.origin == .notModified ? (storable(served.etag), storable(served.lastModified)) : nil
        return PageReplay(
            job: job.name, account: job.account, table: job.table, stored: stored, firstPosition: position,
            revalidated: revalidated, nextPage: step.nextPage, nextURL: step.nextURL,
            nextCursor: step.nextCursor, nextCursorIsNumber: step.nextCursorIsNumber, time: time,
            child: parentID != nil)
    }

    /// Stores a fetched page, or sees a replayed one again; the checkpoint moves past it.
    private func commit(_ step: PageStep, position: Int) async -> StoreOutcome {
        let served = step.served
        let time = Timestamp.string(Date())
        do {
            switch served.content {
            case let .fresh(records, envelope):
                return .stored(try await store.commit(pageCommit(step, records: records, envelope: envelope, position: position,
                                                                 time: time)))
            case let .stored(stored):
                return .stored(try await store.replay(pageReplay(step, stored: stored, position: position, time: time)))
            }
        } catch let missing as ReplayMissingRecords {
            return .missingRecords(missing.missing)
        } catch {
            return .failed("\(error)")
        }
    }
}
