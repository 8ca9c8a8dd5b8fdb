import Foundation

/// How a job's run ended, as the summary, `--report`, `_mirror_runs` and `status` say it.
public enum JobResult: String, Sendable, Codable, Equatable {
    case ok, failed
    /// Stopped by a signal: what was stored stays, and the next run resumes there.
    case interrupted
}

/// One job's outcome in a run: what the summary prints and `_mirror_runs` keeps.
public struct JobReport: Sendable {
    public var job: String
    public var file: String
    public var table: String
    public var database: String
    public var account: String
    public var result: JobResult
    public var walk: WalkResult
    public var pruned: Int
    public var seconds: Double
    /// Downloads, for a job with `downloads`.
    public var files: DownloadSummary?

    public var succeeded: Bool { result == .ok }

    /// One line for the summary on stdout, plus one line per rejected record.
    public var summaryLines: [String] {
        var lines: [String]
        if result == .interrupted {
            lines = ["\(job): INTERRUPTED: \(walk.error ?? "interrupted")"]
        } else if succeeded {
            let counts = walk.counts
            let stored = counts.new + counts.updated + counts.unchanged
            var line = "\(job): ok, \(walk.pages) \(walk.pages == 1 ? "page" : "pages")"
            var reused: [String] = []
            if walk.pagesNotModified > 0 { reused.append("\(walk.pagesNotModified) not modified") }
            if walk.pagesSkipped > 0 { reused.append("\(walk.pagesSkipped) skipped by refresh_after") }
            if !reused.isEmpty { line += " (" + reused.joined(separator: ", ") + ")" }
            line += ", \(stored) records (\(counts.new) new, \(counts.updated) updated, \(counts.unchanged) unchanged)"
            if !walk.rejected.isEmpty { line += ", \(walk.rejected.count) rejected" }
            if walk.retries > 0 { line += ", \(walk.retries) \(walk.retries == 1 ? "retry" : "retries")" }
            if let resumed = walk.resumedAt { line += ", resumed at page \(resumed)" }
            if pruned > 0 { line += ", \(pruned) pruned" }
            if let files {
                line += ", \(files.downloaded) \(files.downloaded == 1 ? "file" : "files") (\(ByteSize.approximate(files.bytes)))"
                if !files.failed.isEmpty { line += ", \(files.failed.count) failed" }
            }
            line += ", stopped: \(walk.stop), " + String(format: "%.2fs", seconds)
            lines = [line]
        } else {
            lines = ["\(job): FAILED: \(walk.error ?? "unknown error")"]
        }
        for rejected in walk.rejected {
            lines.append("  rejected: page \(rejected.page): \(rejected.reason)")
        }
        for failure in files?.failed ?? [] {
            lines.append("  file failed: \(failure.url): \(failure.error)")
        }
        return lines
    }
}

/// The whole run.
public struct RunSummary: Sendable {
    public var reports: [JobReport]

    public var allSucceeded: Bool { reports.allSatisfy(\.succeeded) }
    /// A signal stopped the run.
    public var interrupted = false

    public init(reports: [JobReport], interrupted: Bool = false) {
        self.reports = reports
        self.interrupted = interrupted
    }

    public var text: String {
        reports.flatMap(\.summaryLines).joined(separator: "\n")
    }
}
