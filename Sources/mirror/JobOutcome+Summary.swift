import Foundation
import MirrorModel

/// The summary `run` prints on stdout, one job at a time.
extension JobOutcome {
    /// One line for the summary on stdout, plus one line per rejected record and failed file.
    var summaryLines: [String] {
        var lines: [String]
        switch status {
        case .interrupted:
            lines = ["\(job): INTERRUPTED: \(error ?? "interrupted")"]
        case .failed:
            lines = ["\(job): FAILED: \(error ?? "unknown error")"]
        case .deferred:
            lines = ["\(job): DEFERRED: \(error ?? "deferred until \(resumeAfter ?? "later")")"]
        case .ok:
            let stored = records.new + records.updated + records.unchanged
            var line = "\(job): ok, \(pages.total) \(pages.total == 1 ? "page" : "pages")"
            var reused: [String] = []
            if pages.notModified > 0 { reused.append("\(pages.notModified) not modified") }
            if pages.skipped > 0 { reused.append("\(pages.skipped) skipped by refresh_after") }
            if !reused.isEmpty { line += " (" + reused.joined(separator: ", ") + ")" }
            line += ", \(stored) records (\(records.new) new, \(records.updated) updated, \(records.unchanged) unchanged)"
            if !rejected.isEmpty { line += ", \(rejected.count) rejected" }
            if let columnWarnings { line += ", " + Self.columnWarningsText(columnWarnings) }
            if retries > 0 { line += ", \(retries) \(retries == 1 ? "retry" : "retries")" }
            if let resumedAt { line += ", resumed at page \(resumedAt)" }
            if records.pruned > 0 { line += ", \(records.pruned) pruned" }
            if records.deleted > 0 { line += ", \(records.deleted) deleted" }
            if let since { line += ", since \(since)" }
            if let files {
                line += ", \(files.downloaded) \(files.downloaded == 1 ? "file" : "files") (\(ByteSize.approximate(files.bytes)))"
                if !files.failed.isEmpty { line += ", \(files.failed.count) failed" }
            }
            line += ", stopped: \(stopReason), " + String(format: "%.2fs", durationSeconds)
            lines = [line]
        }
        for rejected in rejected {
            lines.append("  rejected: page \(rejected.page): \(rejected.reason)")
        }
        for failure in files?.failed ?? [] {
            lines.append("  file failed: \(failure.url): \(failure.error)")
        }
        return lines
    }

    /// `3 column warnings (price: 3 not integer)`, the summary line's words for `column_warnings`.
    private static func columnWarningsText(_ warnings: [ColumnWarning]) -> String {
        let total = warnings.reduce(0) { $0 + $1.records }
        return "\(total) column \(total == 1 ? "warning" : "warnings") (" + warnings.map(\.description).joined(separator: ", ") + ")"
    }
}
