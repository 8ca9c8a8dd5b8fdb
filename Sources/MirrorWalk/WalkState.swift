import Foundation
import MirrorJSON
import MirrorModel

/// One page's request: its `{page}` value, its URL and its cursor (which may travel in a
/// POST body rather than the URL). `whole` asks for the page without its stored copy.
struct PageTarget: Hashable, Sendable {
    package let page: Int
    package let url: RedactedURL
    package let cursor: ExactText?
    /// The cursor was a JSON number in the response that gave it.
    package var cursorIsNumber = false
    package var whole = false
}

/// A served page the walk stores, and where the walk goes after it: decided before the
/// commit, so that the checkpoint written with the page says it.
struct PageStep: Sendable {
    package let target: PageTarget
    package let served: ServedPage
    /// The stop condition this page meets, if any.
    package let stop: StopReason?
    /// A cursor or next URL seen before: the walk fails once this page is stored.
    package let loop: String?
    /// The next request, when the walk goes on.
    package let next: PageTarget?
    /// The next URL or the next cursor the response gave (`next`).
    let followURL: RedactedURL?
    let followCursor: String?
    /// The checkpoint: the `{page}` value, next URL and cursor fetched next, secrets
    /// written `${NAME}` (or masked, and then the walk cannot resume from them).
    package let nextPage: Int?
    package let nextURL: String?
    package let nextCursor: String?
    /// The next cursor was a JSON number.
    package let nextCursorIsNumber: Bool
}

/// Where a job's walk is, and what it does with each page served to it: the walk's
/// decisions, without I/O, clocks or tasks. `PageWalker` fetches and stores; this says
/// which page comes next, what a response announces, when the walk stops and why.
struct WalkState {
    package let job: JobSpec
    package let maxPages: Int?
    package private(set) var result = WalkResult()
    /// The `{page}` value of the page stored next.
    package private(set) var page: Int
    private var cursor: String?
    /// The cursor came as a JSON number (not known for one read from a checkpoint).
    private var cursorIsNumber = false
    private var nextURL: RedactedURL?
    /// The position of the next record stored.
    package private(set) var position: Int
    /// Cursors and next URLs met so far, byte for byte: one met twice is a loop.
    private var seen: Set<ExactText> = []
    /// Configured `stop` and `downloads` paths some response of the walk held.
    private var stopPathsFound: Set<String> = []
    private var downloadsFound: Set<Int> = []
    /// Records of the responses read whole (not of stored copies replayed).
    private var recordsRead = 0
    /// A scroll walk's last page's ids: a page repeating them is a loop.
    private var scrolled: [ExactText] = []
    /// The last page (`stop.last_page`) and the records of the whole walk (`stop.total`),
    /// as the latest response that gave them announced them.
    private(set) var lastAnnounced: Int?
    private var announcedTotal: Int?
    /// A replayed page whose records are gone is fetched again, whole.
    private var fetchWhole: RedactedURL?
    /// Neither `{page}` nor `next`: one request.
    package let singlePage: Bool

    package init(job: JobSpec, start: WalkStart, maxPages: Int?) {
        self.job = job
        self.maxPages = maxPages
        page = start.page ?? job.pages.from
        // The checkpoint writes secrets as `${NAME}`.
        cursor = start.cursor.map(job.redactor.expand)
        cursorIsNumber = start.cursor != nil && start.cursorIsNumber
        nextURL = start.nextURL.map { RedactedURL(real: job.redactor.expand($0), redactor: job.redactor) }
        position = start.position
        result.elementsWalked = start.position
        if start.isResumed { result.resumedAt = page }
        singlePage = job.next == nil && !job.url.usesPage && !(job.body?.json.contains("{page}") ?? false)
            && !job.headers.contains { $0.value.real.contains("{page}") }
        // A next URL or cursor that leads back to where the walk started is a loop too.
        if job.next != nil {
            if let nextURL {
                seen.insert(Self.key(url: nextURL.real))
            } else if let cursor {
                seen.insert(Self.key(cursor: cursor))
            } else {
                seen.insert(Self.key(url: job.url.url(page: page, cursor: nil, redactor: job.redactor).real))
            }
        }
    }

    /// A `{page}` walk knows every request in advance: a window of them is in flight.
    var isWindowed: Bool { job.next == nil && !singlePage }

    /// The highest `{page}` value the walk may request: `pages.to` and `--max-pages`.
    var pageLimit: Int {
        var limit = job.pages.to ?? .max
        if let maxPages {
            let (span, overflow) = max(0, maxPages - 1).multipliedReportingOverflow(by: job.pages.step)
            let (last, beyond) = page.addingReportingOverflow(span)
            if !overflow, !beyond { limit = min(limit, last) }
        }
        return limit
    }

    /// The request for the page stored next, or nil once `--max-pages` pages were walked.
    mutating func nextTarget() -> PageTarget? {
        if let maxPages, result.pages >= maxPages {
            result.stop = .maxPages(maxPages)
            return nil
        }
        let url = nextURL ?? job.requestURL(page: page, cursor: cursor)
        let whole = fetchWhole == url
        if whole { fetchWhole = nil }
        return PageTarget(page: page, url: url, cursor: cursor.map(ExactText.init), cursorIsNumber: cursorIsNumber, whole: whole)
    }

    /// The request `nextTarget` would make, asked without moving the walk.
    func peekTarget() -> PageTarget? {
        var walk = self
        return walk.nextTarget()
    }

    /// The `{page}` target of page value `page`, as a window requests it.
    func windowTarget(_ page: Int) -> PageTarget {
        PageTarget(page: page, url: job.url.url(page: page, cursor: nil, redactor: job.redactor), cursor: nil)
    }

    package mutating func fetched(retries: Int) {
        result.retries += retries
    }

    /// Reads what the page stored next came to: the walk ends here without storing it (a
    /// `stop.status`, an empty page), or it stores it and goes on as the step says.
    package mutating func decide(_ fetched: Fetched, for target: PageTarget) -> PageStep? {
        let served: ServedPage
        switch fetched {
        case let .stopStatus(status):
            result.stop = .status(status, page: page)
            return nil
        case let .page(page):
            served = page
        }
        if job.stop.announcesLastPage, let last = served.lastPage {
            lastAnnounced = last
            result.announcedLast.append(AnnouncedLastPage(page: page, last: last))
        }
        if job.stop.total != nil, let total = served.total {
            announcedTotal = total
            result.announcedTotals.append(AnnouncedTotal(page: page, total: total))
        }
        result.unreadable += served.unreadable.map { UnreadableValue(page: page, key: $0.key, message: $0.message) }
        if served.origin == .fetched {
            // A first page of records without its `next` or `has_more` path: the walk
            // would end after it without a word.
            if result.pages == 0, served.recordCount > 0 {
                result.missingPaths += served.absent.map { MissingPath(page: page, message: job.redactor.redact($0)) }
            }
            result.warnings += served.warnings
            stopPathsFound.formUnion(served.stopPathsFound)
            downloadsFound.formUnion(served.downloadsFound)
            recordsRead += served.recordCount
        }
        // With `has_more`, the flag says whether pages follow, a stored copy's as it was
        // kept; one stored before the flag was kept goes on as its next cursor or page says.
        let more: Bool? = job.stop.hasMore == nil ? nil : served.hasMore ?? true
        // An empty page whose flag says more follow does not end the walk; one of a scroll
        // walk always does (its cursor cannot tell an end from a pause).
        if served.elementCount == 0 && (job.stop.empty && more != true || job.next?.isScroll == true) {
            result.count(served)
            result.stop = .emptyPage(page: page)
            return nil
        }

        var stop: StopReason?
        var loop: String?
        var nextCursor: String?
        var followURL: RedactedURL?
        if more == false {
            stop = .noMore(page: page)
        } else if job.next != nil {
            switch served.next {
            case .none:
                stop = .noNextPage(page: page)
            case let .url(text):
                let candidate = RedactedURL(real: text, redactor: job.redactor)
                if !seen.insert(Self.key(url: text)).inserted {
                    loop = "next URL \(candidate.shortDescription) seen twice"
                }
                followURL = candidate
            case let .cursor(text):
                if job.next?.isScroll == true {
                    // The cursor stays; the records move on.
                    if case let .fresh(records, _) = served.content {
                        let ids = records.ids.map(ExactText.init)
                        if !ids.isEmpty, ids == scrolled { loop = "page \(page) repeats the page before it" }
                        scrolled = ids
                    }
                } else if !seen.insert(Self.key(cursor: text)).inserted {
                    loop = "cursor '\(job.redactor.redact(text).cutForMessage())' seen twice"
                }
                nextCursor = text
            }
        } else if singlePage {
            stop = .singlePage
        }
        let step = job.pages.step
        if job.stop.announcesLastPage, let last = lastAnnounced, stop == nil, page >= last {
            stop = .lastPage(page: page)
        }
        if stop == nil, let short = job.stop.short, served.elementCount < short {
            stop = .shortPage(page: page)
        }
        if stop == nil, let total = announcedTotal, result.elementsWalked + served.elementCount >= total {
            stop = .total(total, page: page)
        }
        if stop == nil, job.stop.known == .since, let since = job.since, let lowest = served.lowest,
           SinceValue.compare(lowest, since) <= 0 {
            stop = .reachedSince(page: page)
        }
        if stop == nil, let to = job.pages.to, page + step > to {
            stop = .endOfPages(page: page)
        }
        var next: PageTarget?
        if stop == nil, loop == nil {
            let url = followURL ?? job.requestURL(page: page + step, cursor: nextCursor)
            next = PageTarget(page: page + step, url: url, cursor: nextCursor.map(ExactText.init),
                              cursorIsNumber: nextCursor != nil && served.cursorIsNumber)
        }
        return PageStep(
            target: target, served: served, stop: stop, loop: loop, next: next, followURL: followURL, followCursor: nextCursor,
            nextPage: stop == nil ? page + step : nil,
            nextURL: followURL.map { job.redactor.placeholders($0.real) ?? $0.description },
            nextCursor: nextCursor.map { job.redactor.placeholders($0) ?? job.redactor.redact($0) },
            nextCursorIsNumber: nextCursor != nil && served.cursorIsNumber)
    }

    /// Whether the page after `step` may be requested while `step`'s page is stored. With
    /// `stop.known` the next request hangs on this commit: only a window wider than one guesses.
    func mayFetchAhead(_ step: PageStep) -> Bool {
        guard step.next != nil, result.pages + 1 < (maxPages ?? .max) else { return false }
        // `known: since` is decided before the commit, as the other stops are.
        return job.stop.known == nil || job.stop.known == .since || (isWindowed && job.concurrency > 1)
    }

    /// The step's page was stored: counts it; true when the walk ends with it.
    package mutating func stored(_ step: PageStep, counts: CommitCounts) -> Bool {
        add(counts)
        return moved(past: step, new: counts.new)
    }

    /// Whether the walk may go past the step's page before it is stored, to store it with
    /// the pages after it in one commit: no `stop.known` waits on what its commit finds
    /// (`known: since` is decided before the commit, from the page's values). A fetched page
    /// and a stored copy seen again (a 304, a page `refresh_after` skips) alike.
    func mayMoveAhead(_ step: PageStep) -> Bool {
        guard job.stop.known == nil || job.stop.known == .since else { return false }
        return step.stop == nil && step.loop == nil
    }

    /// Goes past the step's page before it is stored (see `mayMoveAhead`), to learn the
    /// request after it. Returns where the walk stood before: once the commit is done, the
    /// walk goes back there (`goBack`) and past each page stored, with its counts (`stored`).
    mutating func movedAhead(past step: PageStep) -> Mark {
        let mark = Mark(page: page, cursor: cursor, cursorIsNumber: cursorIsNumber, nextURL: nextURL, position: position,
                        pages: result.pages, pagesNotModified: result.pagesNotModified, pagesSkipped: result.pagesSkipped,
                        elementsWalked: result.elementsWalked, bytes: result.bytes, rejected: result.rejected.count,
                        repeated: result.repeated.count, firstStored: result.firstStored, lastStored: result.lastStored)
        let ended = moved(past: step, new: nil)
        assert(!ended, "a page the walk may move ahead of does not end it")
        return mark
    }

    /// What `moved(past:)` changes of a page that neither ends the walk nor is a loop: a
    /// value of its own, where a copy of the whole state would share the walk's growing
    /// collections and make each of their next changes copy them.
    struct Mark {
        fileprivate let page: Int
        fileprivate let cursor: String?
        fileprivate let cursorIsNumber: Bool
        fileprivate let nextURL: RedactedURL?
        fileprivate let position: Int
        fileprivate let pages, pagesNotModified, pagesSkipped, elementsWalked, bytes, rejected, repeated: Int
        fileprivate let firstStored, lastStored: Int?
    }

    /// Goes back to where the walk stood before `movedAhead` went past a page and the pages
    /// after it. What their responses said (announced last pages, unreadable values) stays
    /// said: they were read.
    mutating func goBack(to mark: Mark) {
        page = mark.page
        cursor = mark.cursor
        cursorIsNumber = mark.cursorIsNumber
        nextURL = mark.nextURL
        position = mark.position
        result.pages = mark.pages
        result.pagesNotModified = mark.pagesNotModified
        result.pagesSkipped = mark.pagesSkipped
        result.elementsWalked = mark.elementsWalked
        result.bytes = mark.bytes
        result.rejected.removeSubrange(mark.rejected...)
        result.repeated.removeSubrange(mark.repeated...)
        result.firstStored = mark.firstStored
        result.lastStored = mark.lastStored
    }

    /// Adds what a page's commit counted.
    mutating func add(_ counts: CommitCounts) {
        result.counts.new += counts.new
        result.counts.updated += counts.updated
        result.counts.unchanged += counts.unchanged
        result.counts.deleted += counts.deleted
        result.counts.movedChildren += counts.movedChildren
        result.counts.addMismatches(counts.mismatches)
        result.counts.firstMovedChild = result.counts.firstMovedChild ?? counts.firstMovedChild
    }

    /// Moves past a page stored or about to be: `new`, its records stored new, decides a
    /// `stop.known`.
    private mutating func moved(past step: PageStep, new: Int?) -> Bool {
        let served = step.served
        result.count(served)
        position += served.recordCount
        result.firstStored = result.firstStored ?? page
        result.lastStored = page
        if let loop = step.loop {
            result.error = .loop(loop, method: job.method.rawValue, url: step.target.url.shortDescription, job: job.name, kept: kept)
            return true
        }
        var stop = step.stop
        if stop == nil, let known = job.stop.known, let new, served.recordCount > 0 {
            switch known {
            case .page where new == 0: stop = .knownPage(page: page)
            case .record where new < served.recordCount: stop = .knownRecord(page: page)
            default: break
            }
        }
        if let stop {
            result.stop = stop
            return true
        }
        page += job.pages.step
        cursor = step.followCursor
        cursorIsNumber = step.followCursor != nil && served.cursorIsNumber
        nextURL = step.followURL
        return false
    }

    /// The step's page was a replay whose records are no longer all stored: the walk
    /// fetches it again, whole, and where it leads is not seen yet.
    mutating func refetchWhole(_ step: PageStep) {
        fetchWhole = step.target.url
        forget(step)
    }

    /// Where the step's page leads is not seen yet: the walk goes back before it, to decide
    /// it again (the pages after a stored copy fetched again whole, see `refetchWhole`).
    mutating func forget(_ step: PageStep) {
        if let url = step.followURL { seen.remove(Self.key(url: url.real)) }
        if let cursor = step.followCursor { seen.remove(Self.key(cursor: cursor)) }
    }

    /// The walk is over: the `stop` paths no response held and the `downloads` paths no
    /// stored record held are noted, when responses were read and records stored.
    package mutating func finish() {
        guard result.pagesFetched > 0 else { return }
        for path in [job.stop.lastPage, job.stop.pages, job.stop.total].compactMap({ $0 })
            where !stopPathsFound.contains(path.description) {
            result.missingPaths.append(MissingPath(page: nil, message: "'\(path)' (stop) was in no response of the walk"))
        }
        // Only records read from a response can say a `downloads` path is in none of them.
        if recordsRead > 0 {
            for (index, path) in job.downloads.enumerated() where !downloadsFound.contains(index) {
                result.missingPaths.append(MissingPath(page: nil, message: "'\(path)' (downloads) was in no record of the walk"))
            }
        }
    }

    /// A response failed the walk: nothing of it is stored.
    package mutating func fail(_ fault: PageFault) {
        // What went wrong may quote the server or the client library: mask any secret in it.
        let problem = job.redactor.redact(fault.problem)
        let failure = PageFailure(page: page, method: job.method.rawValue, url: fault.url.shortDescription,
                                  status: fault.status, notSent: fault.notSent, problem: problem)
        if let until = fault.resumeAfter {
            // The API asked for a longer wait than the job allows: a pause, resumed here.
            result.stop = .deferred
            result.error = .deferred(failure, until: Timestamp.string(until), job: job.name, kept: kept)
            return
        }
        result.error = .page(failure, job: job.name, kept: kept)
    }

    /// The store could not take the page.
    mutating func failStoring(_ step: PageStep, reason: String) {
        fail(PageFault(url: step.target.url, status: step.served.status, problem: "cannot store the page: \(reason)"))
    }

    /// The walk was cancelled: a signal stopped the run. The page being stored, if any,
    /// was stored whole or not at all; the next run resumes after the last one stored.
    package mutating func cancel() {
        result.stop = .interrupted
        result.error = .interrupted(job: job.name, page: page, kept: kept)
    }

    /// The pages stored so far.
    private var kept: JobFailure.Kept {
        JobFailure.Kept(first: result.firstStored, last: result.lastStored)
    }

    private static func key(url: String) -> ExactText { ExactText("url " + url) }
    private static func key(cursor: String) -> ExactText { ExactText("cursor " + cursor) }
}
