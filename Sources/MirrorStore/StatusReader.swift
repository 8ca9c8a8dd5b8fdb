package import Foundation
package import GRDB
package import MirrorModel

/// Reads the status of an output folder. A job is stale when it has no successful run
/// within `staleAfter` seconds (default one day).
package enum StatusReader {
    package static func read(folder: String, jobFiles: [JobFile] = [], staleAfter: Double = 86_400, now: Date = Date()) throws -> StatusReport {
        var report = StatusReport(output: folder, tables: [], jobs: [])
        let names = RecordReader.databases(in: folder)
        let configuration = RecordReader.readOnly
        let threshold = Timestamp.string(now.addingTimeInterval(-staleAfter))
        // Child jobs' queues live in their parents' files: gathered from every file.
        var queues: [String: (pending: Int, failed: Int)] = [:]
        func key(_ job: String, _ account: String) -> String { job + "\u{0}" + account }
        for name in names {
            let path = (folder as NSString).appendingPathComponent(name)
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            try queue.read { db in
                guard try db.tableExists(StoreSchema.runs) else { return }
                if try db.tableExists(StoreSchema.parents) {
                    for row in try Row.fetchAll(db, sql: """
                        SELECT job, account, count(*) FILTER (WHERE state = 'pending') AS pending,
                          count(*) FILTER (WHERE state = 'failed') AS failed
                        FROM \(StoreSchema.parents) GROUP BY job, account
                        """) {
                        let before = queues[key(row["job"], row["account"])] ?? (0, 0)
                        queues[key(row["job"], row["account"])] = (before.pending + row["pending"], before.failed + row["failed"])
                    }
                }
                let tables = try String.fetchAll(db, sql: StoreSchema.recordTables)
                for table in tables {
                    let row = try Row.fetchOne(db, sql: "SELECT count(*) AS records, count(DISTINCT account) AS accounts FROM \"\(table)\"")
                    report.tables.append(.init(database: name, table: table, records: row?["records"] ?? 0, accounts: row?["accounts"] ?? 0))
                }
                let rows = try Row.fetchAll(db, sql: """
                    SELECT r.*, (SELECT max(finished_at) FROM \(StoreSchema.runs) s
                                 WHERE s.job = r.job AND s.account = r.account AND s.result = 'ok') AS last_success
                    FROM \(StoreSchema.runs) r
                    WHERE r.run_id = (SELECT max(run_id) FROM \(StoreSchema.runs) t WHERE t.job = r.job AND t.account = r.account)
                    ORDER BY r.job, r.account
                    """)
                var files: [String: StatusReport.Files] = [:]
                if try db.tableExists(StoreSchema.files) {
                    for row in try Row.fetchAll(db, sql: """
                        SELECT job, count(*) FILTER (WHERE status = 'ok') AS downloaded,
                          coalesce(sum(size) FILTER (WHERE status = 'ok'), 0) AS bytes,
                          count(*) FILTER (WHERE status IN ('failed', 'refused')) AS failed,
                          count(*) FILTER (WHERE status = 'pending') AS pending
                        FROM \(StoreSchema.files) GROUP BY job
                        """) {
                        files[row["job"]] = .init(downloaded: row["downloaded"], bytes: row["bytes"], failed: row["failed"],
                                                  pending: row["pending"])
                    }
                }
                var marks: [String: Row] = [:]
                if try db.columns(in: StoreSchema.walks).contains(where: { $0.name == "high_water" }) {
                    for row in try Row.fetchAll(db, sql: """
                        SELECT job, account, since, high_water, high_water_path FROM \(StoreSchema.walks)
                        WHERE since IS NOT NULL OR high_water_path IS NOT NULL
                        """) {
                        marks[(row["job"] as String) + "\u{0}" + (row["account"] as String)] = row
                    }
                }
                for row in rows {
                    var job = try Self.job(from: row, database: name, threshold: threshold)
                    job.files = files[job.job]
                    if let mark = marks[job.job + "\u{0}" + job.account] {
                        job.since = (mark["since"] as String?).flatMap(SinceValue.init(json:))?.text
                        job.highWater = (mark["high_water"] as String?).flatMap(SinceValue.init(json:))?.text
                        job.highWaterPath = mark["high_water_path"]
                    }
                    report.jobs.append(job)
                }
            }
        }
        for index in report.jobs.indices {
            // The queue is keyed by the parent's account, which is the child's unless it sets another.
            let job = report.jobs[index]
            if let queue = queues[key(job.job, job.account)]
                ?? queues.first(where: { $0.key.hasPrefix(job.job + "\u{0}") })?.value {
                report.jobs[index].parentsPending = queue.pending
                report.jobs[index].parentsFailed = queue.failed
            } else if report.jobs[index].lastRun?.parents != nil {
                report.jobs[index].parentsPending = 0
                report.jobs[index].parentsFailed = 0
            }
        }
        // Jobs named in the given files that never ran are stale too.
        for file in jobFiles {
            for job in file.jobs where !report.jobs.contains(where: { $0.job == job.name && $0.account == job.account }) {
                report.jobs.append(.init(job: job.name, account: job.account, table: job.table, database: job.database,
                                         lastRun: nil, files: nil, lastSuccess: nil, stale: true))
            }
        }
        if !jobFiles.isEmpty {
            let names = Set(jobFiles.flatMap { $0.jobs.map(\.name) })
            report.jobs = report.jobs.filter { names.contains($0.job) }
        }
        return report
    }

    private static func job(from row: Row, database: String, threshold: String) throws -> StatusReport.Job {
        let lastSuccess: String? = row["last_success"]
        var run: JobOutcome?
        if let json: String = row["outcome"] {
            run = try? JobOutcome.decoder.decode(JobOutcome.self, from: Data(json.utf8))
        }
        let stale = lastSuccess.map { $0 < threshold } ?? true
        return StatusReport.Job(job: row["job"], account: row["account"], table: row["table_name"], database: database,
                                lastRun: run ?? JobOutcome(columns: row, database: database), files: nil,
                                lastSuccess: lastSuccess, stale: stale)
    }
}

extension JobOutcome {
    /// A run recorded before `_mirror_runs` kept the whole outcome: what its columns hold.
    package init(columns row: Row, database: String) {
        let notModified: Int = row["pages_not_modified"] ?? 0, skipped: Int = row["pages_skipped"] ?? 0
        let downloaded: Int = row["files_downloaded"] ?? 0
        self.init(
            job: row["job"], file: "", table: row["table_name"], database: database, account: row["account"],
            status: JobResult(rawValue: row["result"]) ?? .failed, startedAt: row["started_at"],
            finishedAt: row["finished_at"], stopReason: row["stop_reason"], complete: false,
            pages: Pages(total: row["pages"], fetched: row["pages"] - notModified - skipped, notModified: notModified,
                         skipped: skipped),
            records: Records(new: row["records_new"], updated: row["records_updated"],
                             unchanged: row["records_unchanged"], rejected: row["records_rejected"],
                             pruned: row["records_pruned"], deleted: row["records_deleted"] ?? 0),
            rejected: [], retries: 0, bytes: 0, durationSeconds: 0,
            files: downloaded > 0 ? DownloadSummary(downloaded: downloaded) : nil, error: row["error"],
            resumeAfter: row["resume_after"])
    }
}

