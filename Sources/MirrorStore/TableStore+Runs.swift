import Foundation
import GRDB
package import MirrorModel

extension TableStore {
    /// Deletes the records of `account` not seen since `time` (the walk's start). In a
    /// table other jobs share (`share_table`), only those `job` stored: the others' records
    /// are theirs to prune.
    package func prune(table: String, account: String, notSeenSince time: String, job: String, shared: Bool) async throws -> Int {
        try await pool.write { db in
            if shared {
                try db.execute(sql: """
                    DELETE FROM "\(table)" WHERE account = ?1 AND last_seen < ?2 AND id IN (
                      SELECT id FROM \(StoreSchema.owners) WHERE table_name = ?3 AND account = ?1 AND job = ?4)
                    """, arguments: [account, time, table, job])
                let pruned = db.changesCount
                // Ids no job's records hold any more are no one's.
                try db.execute(sql: """
                    DELETE FROM \(StoreSchema.owners) WHERE table_name = ?1 AND account = ?2
                      AND id NOT IN (SELECT id FROM "\(table)" WHERE account = ?2)
                    """, arguments: [table, account])
                return pruned
            } else {
                try db.execute(sql: "DELETE FROM \"\(table)\" WHERE account = ? AND last_seen < ?", arguments: [account, time])
            }
            return db.changesCount
        }
    }

    /// Keeps a job's outcome in `_mirror_runs`: the columns docs/on-disk-format.md lists, and the whole
    /// value as JSON in `outcome`.
    package func record(run: JobOutcome) async throws {
        let outcome = String(decoding: try JobOutcome.encoder(pretty: false).encode(run), as: UTF8.self)
        try await pool.write { db in
            try db.execute(sql: """
                INSERT INTO \(StoreSchema.runs) (job, account, table_name, started_at, finished_at, result, stop_reason,
                  pages, pages_not_modified, pages_skipped, records_new, records_updated, records_unchanged,
                  records_rejected, records_pruned, error, files_downloaded, files_failed, outcome, records_deleted,
                  resume_after, column_warnings)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [run.job, run.account, run.table, run.startedAt, run.finishedAt, run.status.rawValue,
                                 run.stopReason, run.pages.total, run.pages.notModified, run.pages.skipped, run.records.new,
                                 run.records.updated, run.records.unchanged, run.records.rejected, run.records.pruned,
                                 run.error, run.files?.downloaded ?? 0, run.files?.failed.count ?? 0, outcome,
                                 run.records.deleted, run.resumeAfter,
                                 run.columnWarnings?.reduce(0) { $0 + $1.records } ?? 0])
        }
    }

    /// When the job last ended ok for `account`, as `_mirror_runs` keeps it (`mirror status`'s
    /// last success); nil when it never did.
    package func lastSuccess(job: String, account: String) async throws -> String? {
        try await pool.read { db in
            try String.fetchOne(db, sql: """
                SELECT max(finished_at) FROM \(StoreSchema.runs) WHERE job = ? AND account = ? AND result = 'ok'
                """, arguments: [job, account])
        }
    }
}
