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

    /// One line: `events: page 37/100, 3700 records (120 new), 2 not modified, 3.1 MB`.
    package var text: String {
        var parts: [String] = []
        if let page {
            parts.append(lastPage.map { "page \(page)/\($0)" } ?? "page \(page)")
        } else {
            parts.append("starting")
        }
        let counts = walk.counts
        parts.append("\(counts.new + counts.updated + counts.unchanged) records (\(counts.new) new)")
        if walk.pagesNotModified > 0 { parts.append("\(walk.pagesNotModified) not modified") }
        if walk.pagesSkipped > 0 { parts.append("\(walk.pagesSkipped) skipped") }
        if walk.retries > 0 { parts.append("\(walk.retries) \(walk.retries == 1 ? "retry" : "retries")") }
        parts.append(ByteSize.approximate(walk.bytes))
        if let files {
            var text = "\(files.downloaded) \(files.downloaded == 1 ? "file" : "files") (\(ByteSize.approximate(files.bytes)))"
            if !files.failed.isEmpty { text += ", \(files.failed.count) failed" }
            parts.append(text)
        }
        switch ending {
        case nil: break
        case .complete, .incomplete: parts.append("done")
        case .failed: parts.append("FAILED")
        case .interrupted: parts.append("INTERRUPTED")
        case .deferred: parts.append("DEFERRED")
        }
        return "\(job): " + parts.joined(separator: ", ")
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
