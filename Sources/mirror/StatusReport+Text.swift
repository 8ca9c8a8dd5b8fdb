import MirrorModel

/// What `status` prints without `--json`.
extension StatusReport {
    /// The human-readable form.
    var text: String {
        var lines = ["output: \(output)"]
        if tables.isEmpty { lines.append("no tables yet") }
        for table in tables {
            lines.append("table \(table.table) (\(table.database)): \(table.records) records, \(table.accounts) \(table.accounts == 1 ? "account" : "accounts")")
        }
        for job in jobs {
            let account = job.account.isEmpty ? "" : " [account \(job.account)]"
            let stale = job.stale ? ", STALE" : ""
            if let run = job.lastRun {
                var line = "job \(job.job)\(account): last run \(run.finishedAt) \(run.status.rawValue), \(run.pages.total) pages, "
                    + "\(run.records.new) new, \(run.records.updated) updated, \(run.records.unchanged) unchanged, "
                    + (run.records.deleted > 0 ? "\(run.records.deleted) deleted, " : "")
                    + "stopped: \(run.stopReason)" + (run.resumeAfter.map { ", resumes after \($0)" } ?? "") + stale
                if let files = job.files {
                    line += "\n  files: \(files.downloaded) downloaded (\(ByteSize.approximate(files.bytes))), "
                        + "\(files.failed) failed, \(files.pending) pending"
                }
                if job.since != nil || job.highWater != nil {
                    line += "\n  since: \(job.since ?? "(empty)")"
                    if let path = job.highWaterPath {
                        line += ", highest \(path) stored: \(job.highWater ?? "none")"
                    }
                }
                if let pending = job.parentsPending, let failed = job.parentsFailed {
                    line += "\n  parents: \(pending) pending, \(failed) failed"
                }
                if let error = run.error { line += "\n  error: \(error)" }
                lines.append(line)
            } else {
                lines.append("job \(job.job)\(account): never run\(stale)")
            }
        }
        return lines.joined(separator: "\n")
    }
}
