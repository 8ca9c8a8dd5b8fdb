import Synchronization

/// Where one job's walk stands, reported after every page and when the job ends.
package struct JobProgress: Sendable {
    package var job: String
    /// How the job ended; nil while it runs.
    package var ending: WalkEnding?
    /// The `{page}` value of the page last stored.
    package var page: Int?
    /// `pages.to`, when the job sets it.
    package var lastPage: Int?
    package var walk: WalkResult
    /// Downloads so far, for a job with `downloads`.
    package var files: DownloadSummary?

    package init(job: String, ending: WalkEnding? = nil, page: Int?, lastPage: Int?, walk: WalkResult, files: DownloadSummary? = nil) {
        self.files = files
        self.job = job
        self.ending = ending
        self.page = page
        self.lastPage = lastPage
        self.walk = walk
    }
}

/// Receives progress from every job of a run, from any task.
package typealias ProgressHandler = @Sendable (JobProgress) -> Void

/// Joins one job's walk progress and its download progress into one line: downloads
/// go on between pages and after the walk.
package final class ProgressRelay: Sendable {
    private let latest = Mutex<JobProgress?>(nil)
    private let handler: ProgressHandler

    package init(_ handler: @escaping ProgressHandler) {
        self.handler = handler
    }

    package func walked(_ progress: JobProgress) {
        latest.withLock { $0 = progress }
        handler(progress)
    }

    package func downloaded(_ files: DownloadSummary) {
        let progress = latest.withLock { latest -> JobProgress? in
            latest?.files = files
            return latest
        }
        if let progress { handler(progress) }
    }
}
