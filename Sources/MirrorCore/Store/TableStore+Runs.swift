import GRDB

extension TableStore {
    /// Deletes the records of `account` not seen since `time` (the walk's start).
    public func prune(table: String, account: String, notSeenSince time: String) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM \"\(table)\" WHERE account = ? AND last_seen < ?", arguments: [account, time])
            return db.changesCount
        }
    }

    public func record(run: RunRecord) async throws {
        try await pool.write { db in
            try db.execute(sql: """
                INSERT INTO \(StoreSchema.runs) (job, account, table_name, started_at, finished_at, result, stop_reason,
                  pages, pages_not_modified, pages_skipped, records_new, records_updated, records_unchanged,
                  records_rejected, records_pruned, error, files_downloaded, files_failed)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [run.job, run.account, run.table, run.startedAt, run.finishedAt, run.result.rawValue,
                                 run.stopReason, run.pages, run.pagesNotModified, run.pagesSkipped, run.counts.new,
                                 run.counts.updated, run.counts.unchanged, run.rejected, run.pruned, run.error,
                                 run.filesDownloaded, run.filesFailed])
        }
    }
}
