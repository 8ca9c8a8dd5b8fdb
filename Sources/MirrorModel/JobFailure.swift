/// Why a job's walk failed or was stopped: one value from the page that failed to the job's
/// outcome, said as the user's sentence (`job 'events': GET …: HTTP 503: …; page 4 not
/// stored, pages 1-3 kept`) only where it is shown: the summary, `--report`,
/// `_mirror_runs.error`, `status` and verify's faults. The words of an HTTP failure are the
/// HTTP floor's own (`HTTPError`), masked by the job's redactor before they get here.
package struct JobFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The pages a walk stored before it ended, first and last.
    package struct Kept: Sendable, Equatable, CustomStringConvertible {
        package var first: Int?
        package var last: Int?

        package init(first: Int?, last: Int?) {
            self.first = first
            self.last = last
        }

        /// `pages 1-6 kept`, `page 1 kept` or `nothing stored`.
        package var description: String { said(storing: true) }

        /// For a walk that stores nothing (`verify`): `pages 1-6 walked`, `page 1 walked` or
        /// `nothing walked`.
        func said(storing: Bool) -> String {
            guard let first, let last else { return storing ? "nothing stored" : "nothing walked" }
            let verb = storing ? "kept" : "walked"
            return first == last ? "page \(first) \(verb)" : "pages \(first)-\(last) \(verb)"
        }
    }

    indirect enum Code: Sendable, Equatable {
        /// A response failed the walk: nothing of it was stored.
        case page(PageFailure, kept: Kept)
        /// A cursor or next URL was seen twice.
        case loop(method: String, url: String, loop: String, kept: Kept)
        /// A signal or `--max-time` stopped the walk at this page.
        case interrupted(page: Int, kept: Kept)
        /// A child job was stopped after walking the children of `walked` of its parents.
        case parentsInterrupted(walked: Int, queued: Int)
        /// Some parents' walks failed; `first` is the first of their failures.
        case parentsFailed(failed: Int, queued: Int, first: JobFailure)
        /// The database (at `path`) failed.
        case store(path: String, reason: String)
        /// The parent record could not be used to fill a child job.
        case parent(id: String, reason: String)
        /// A database the job needs could not be opened (`what`: whose it is, when not the job's own).
        case open(path: String, what: String, reason: String)
        /// The API asked for a wait longer than `max_wait` (or past `--max-time`) before this
        /// page: the walk paused there, to resume after `until`. `failure.status` is nil when
        /// the request was not sent (the host's quota was spent).
        case deferred(PageFailure, until: String, kept: Kept)
        /// An earlier run deferred the job until `until`, which has not come: nothing was
        /// walked. `page`: where the walk resumes, when it is a `{page}` value.
        case deferredEarlier(until: String, page: Int?)
        /// Some parents' walks were deferred (none failed); `first` is the first of them, and
        /// `until` the latest time one of them may resume.
        case parentsDeferred(deferred: Int, queued: Int, until: String, first: JobFailure)
    }

    /// The job's name.
    package let job: String
    let code: Code

    init(job: String, _ code: Code) {
        self.job = job
        self.code = code
    }

    package static func page(_ failure: PageFailure, job: String, kept: Kept) -> JobFailure {
        JobFailure(job: job, .page(failure, kept: kept))
    }

    package static func loop(_ loop: String, method: String, url: String, job: String, kept: Kept) -> JobFailure {
        JobFailure(job: job, .loop(method: method, url: url, loop: loop, kept: kept))
    }

    package static func interrupted(job: String, page: Int, kept: Kept) -> JobFailure {
        JobFailure(job: job, .interrupted(page: page, kept: kept))
    }

    package static func parentsInterrupted(job: String, walked: Int, queued: Int) -> JobFailure {
        JobFailure(job: job, .parentsInterrupted(walked: walked, queued: queued))
    }

    package static func parentsFailed(job: String, failed: Int, queued: Int, first: JobFailure) -> JobFailure {
        JobFailure(job: job, .parentsFailed(failed: failed, queued: queued, first: first))
    }

    package static func store(job: String, path: String, _ error: any Error) -> JobFailure {
        JobFailure(job: job, .store(path: path, reason: "\(error)"))
    }

    package static func parent(job: String, id: String, _ error: any Error) -> JobFailure {
        JobFailure(job: job, .parent(id: id, reason: "\(error)"))
    }

    package static func open(job: String, path: String, what: String, _ error: any Error) -> JobFailure {
        JobFailure(job: job, .open(path: path, what: what, reason: "\(error)"))
    }

    package static func deferred(_ failure: PageFailure, until: String, job: String, kept: Kept) -> JobFailure {
        JobFailure(job: job, .deferred(failure, until: until, kept: kept))
    }

    package static func deferredEarlier(job: String, until: String, page: Int?) -> JobFailure {
        JobFailure(job: job, .deferredEarlier(until: until, page: page))
    }

    package static func parentsDeferred(job: String, deferred: Int, queued: Int, until: String, first: JobFailure) -> JobFailure {
        JobFailure(job: job, .parentsDeferred(deferred: deferred, queued: queued, until: until, first: first))
    }

    /// When a deferred job may resume (UTC ISO 8601); nil for anything but a deferral.
    package var resumeAfter: String? {
        switch code {
        case let .deferred(_, until, _), let .deferredEarlier(until, _), let .parentsDeferred(_, _, until, _): until
        default: nil
        }
    }

    /// The API asked for a longer wait than the job allows: a pause, not a failure.
    package var isDeferral: Bool { resumeAfter != nil }

    /// The request a deferral stopped before, when one did.
    package var deferredPage: PageFailure? {
        if case let .deferred(failure, _, _) = code { failure } else { nil }
    }

    /// A signal or `--max-time` stopped the walk: nothing failed.
    package var isInterruption: Bool {
        switch code {
        case .interrupted, .parentsInterrupted: true
        default: false
        }
    }

    /// The response that failed the walk, when one did.
    package var page: PageFailure? {
        if case let .page(failure, _) = code { failure } else { nil }
    }

    /// What was seen twice, when a loop ended the walk.
    package var loop: String? {
        if case let .loop(_, _, loop, _) = code { loop } else { nil }
    }

    /// The sentence a user reads.
    package var description: String { said(storing: true) }

    /// The sentence for a walk that stores nothing (`verify`): what it walked, not what it kept.
    package var walkedDescription: String { said(storing: false) }

    private func said(storing: Bool) -> String {
        let subject = "job '\(job)': "
        switch code {
        case let .page(failure, kept):
            let page = storing ? "page \(failure.page) not stored" : "at page \(failure.page)"
            return subject + "\(failure.description); \(page), \(kept.said(storing: storing))"
        case let .loop(method, url, loop, kept):
            return subject + "\(method) \(url): loop: \(loop); \(kept.said(storing: storing))"
        case let .interrupted(page, kept):
            return subject + "interrupted at page \(page); \(kept.said(storing: storing))"
        case let .parentsInterrupted(walked, queued):
            return subject + "interrupted after \(walked) of \(queued) parents; the others are walked by the next run"
        case let .parentsFailed(failed, queued, first):
            // The first failure names the job itself.
            return "\(failed) of \(queued) parents failed (walked again by the next run); first: \(first.said(storing: storing))"
        case let .store(path, reason):
            return subject + "\(path): \(reason)"
        case let .parent(id, reason):
            return subject + "parent '\(id)': \(reason)"
        case let .open(path, what, reason):
            return subject + "cannot open \(path)\(what): \(reason)"
        case let .deferred(failure, until, kept):
            let answer = failure.status.map { "HTTP \($0)" } ?? "not sent"
            let page = storing ? "page \(failure.page) not stored" : "at page \(failure.page)"
            return subject + "\(failure.method) \(failure.url): \(answer): \(failure.problem); deferred until \(until): "
                + "\(page), \(kept.said(storing: storing))"
        case let .deferredEarlier(until, page):
            return subject + "not walked: an earlier run deferred it until \(until), as the API asked; "
                + (page.map { "the first run after then resumes at page \($0)" } ?? "the first run after then resumes where it stopped")
        case let .parentsDeferred(deferred, queued, until, first):
            return "\(deferred) of \(queued) parents deferred until \(until) at the latest (walked by the first run after then); "
                + "first: \(first.said(storing: storing))"
        }
    }
}
