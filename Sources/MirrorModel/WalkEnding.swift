/// How a job's walk ended: the one value that `_mirror_walks.state` keeps, the run's status
/// (`ok`, `failed`, `interrupted`, `deferred`: the summary, `--report`, `_mirror_runs.result`, `status`)
/// and its `complete` flag are read from, and that a job's last progress line shows.
/// `StopReason` says what ended it; `JobFailure` says what went wrong.
package enum WalkEnding: String, Sendable, Equatable {
    /// It saw everything: a stop condition or `pages.to`.
    case complete
    /// It ended well without seeing everything: cut by `--max-pages`.
    case incomplete
    case failed
    /// A signal or `--max-time` stopped it: what was stored stays, and the next run resumes there.
    case interrupted
    /// The API asked for a longer wait than `max_wait`: what was stored stays, and the first
    /// run after the time it may resume resumes there.
    case deferred

    /// The one rule: how `walk` ended.
    package init(_ walk: WalkResult) {
        if walk.stop == .interrupted || walk.error?.isInterruption == true {
            self = .interrupted
        } else if walk.error?.isDeferral == true {
            self = .deferred
        } else if walk.error != nil {
            self = .failed
        } else {
            self = walk.stop.isComplete ? .complete : .incomplete
        }
    }

    /// The run's status, as the summary, `--report`, `_mirror_runs.result` and `status` say it.
    package var status: JobResult {
        switch self {
        case .complete, .incomplete: .ok
        case .failed: .failed
        case .interrupted: .interrupted
        case .deferred: .deferred
        }
    }
}
