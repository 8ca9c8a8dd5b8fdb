import Foundation
package import GRDB
import GRDBSQLite
package import MirrorModel

/// One SQLite file of the output folder: its record tables and bookkeeping.
/// GRDB's pool serializes writes; each page is one `write` transaction. Every access from
/// a task is GRDB's async one: it suspends instead of blocking the cooperative pool, and
/// a cancelled task's transaction is rolled back, never half stored.
package final class TableStore: PageStore, FileIndex {
    package let path: String
    package let pool: DatabasePool
    /// Copies the WAL into the database file as pages are stored (see `Checkpointer`).
    let checkpointer: Checkpointer

    package init(path: String) throws {
        self.path = path
        var configuration = Configuration()
        configuration.busyMode = .timeout(Self.busyTimeout)
        configuration.prepareDatabase { db in
            // Pages of 8 KB in a file made now (a file made before keeps its own): a page's
            // records and envelope, ~170 KB of text, are half as many WAL frames to write and
            // copy, half as many overflow pages to chain. Set before the file turns to WAL,
            // after which it can no longer change.
            try db.execute(sql: "PRAGMA page_size = 8192")
            // WAL keeps every page atomic; NORMAL skips the fsync of each commit.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // A record insert fires the change feed's trigger, so each one keeps a statement
            // journal: in memory, not a temporary file written for every record. (The one
            // large sort of a write, tidying the feed, switches back to a file.)
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
            // The checkpointer copies the WAL, beside the writer (see `Checkpointer`).
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
        }
        checkpointer = Checkpointer(path: path)
        pool = try DatabasePool(path: path, configuration: configuration)
        try StoreSchema.migrate(pool)
    }

    /// Seconds a write waits for another connection's lock before it fails.
    static let busyTimeout = 10.0

    /// Copies every page of the WAL into the database file and empties the WAL, so that the
    /// database file alone holds what was stored: a reader that stays open while the run ends
    /// keeps SQLite from deleting the WAL when the store closes, and without this it would
    /// leave a WAL full of pages behind. A reader in the middle of a read keeps the WAL as it
    /// is; that is no error, and nothing waits for it: a later checkpoint copies it.
    package func checkpoint() async throws {
        await checkpointer.idle()
        try await pool.writeWithoutTransaction { db in try Self.checkpoint(db, mode: "TRUNCATE") }
    }

    /// A checkpoint of `mode` on the writer's connection, waiting for no other connection.
    static func checkpoint(_ db: Database, mode: String) throws {
        let connection = db.sqliteConnection
        sqlite3_busy_timeout(connection, 0)
        defer { sqlite3_busy_timeout(connection, Int32(busyTimeout * 1000)) }
        // One row: busy (1 when a reader kept the checkpoint from finishing), WAL frames, frames copied.
        _ = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(\(mode))")
    }

    /// Creates the record table and its change-feed triggers if they are missing; a child job's (`parent`) gets a
    /// `parent_id` column and its index. The table's generated columns become `columns` (see `GeneratedColumns`).
    /// A table that holds no row yet gets them from `completeColumns`, and their indexes from `indexColumns`, after its first walk
    /// (here only their names are checked), unless one is stored. SQLite computes every generated column of a row
    /// each time it writes the row, so a walk that fills a table computes none; and one index built from every row at once costs a
    /// fraction of keeping it row by row, page after page, where a column's values come in no order (each page's
    /// commit would rewrite most of the index's pages). Its views become those of `explode` (see `ExplodedViews`).
    /// Returns the typed columns it added to a table that held rows (new, or changed), whose mismatches among
    /// those rows `columnWarnings` counts.
    @discardableResult
    package func prepare(table: String, child: Bool = false, columns: [RecordColumn] = [],
                        explode: [ExplodedList] = []) async throws -> [RecordColumn] {
        try await pool.write { db in
            try db.execute(sql: StoreSchema.createTable(table))
            try db.execute(sql: StoreSchema.changeTriggers(table))
            if child, try !db.columns(in: table).contains(where: { $0.name == "parent_id" }) {
                try db.execute(sql: "ALTER TABLE \"\(table)\" ADD COLUMN parent_id TEXT")
            }
            if child {
                try db.execute(sql: StoreSchema.createParentIndex(table))
                try db.execute(sql: StoreSchema.parentChangeTrigger(table))
            }
            let filled = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \"\(table)\")") ?? true
            // A stored column is computed as a row is written however late it comes, and one added to a filled
            // table rebuilds it: an empty table gets it now.
            var added: [RecordColumn] = []
            if filled || columns.contains(where: \.stored) {
                added = try GeneratedColumns.update(db, table: table, to: columns, indexes: filled)
            } else {
                _ = try GeneratedColumns.plan(db, table: table, to: columns)
            }
            try ExplodedViews.update(db, table: table, to: explode)
            return filled ? added.filter { $0.type != nil } : []
        }
    }

    /// Makes the table's generated columns `columns`, for a table that was empty when its walk was prepared (see
    /// `prepare`); for any other, they are so already, and nothing is written. Their indexes are `indexColumns`'.
    package func completeColumns(table: String, columns: [RecordColumn]) async throws {
        try await pool.write { db in _ = try GeneratedColumns.update(db, table: table, to: columns, indexes: false) }
    }

    /// Creates the indexes of `columns` that the table lacks (see `prepare`).
    package func indexColumns(table: String, columns: [RecordColumn]) async throws {
        guard columns.contains(where: \.index) else { return }
        try await pool.write { db in try GeneratedColumns.createIndexes(db, table: table, columns: columns) }
    }

    /// For each typed column of `columns`, the records of `account` whose value at the
    /// column's path is of another JSON type than the column's, so that the column is NULL
    /// where the record holds a value; the columns with none are left out. One pass over
    /// the records, in one query: for columns just added to stored records (see `prepare`).
    package func columnWarnings(table: String, account: String, columns: [RecordColumn]) async throws -> [ColumnWarning] {
        let typed = columns.filter { $0.type != nil }
        guard !typed.isEmpty else { return [] }
        return try await pool.read { db in
            guard let row = try Row.fetchOne(db, sql: GeneratedColumns.mismatches(table: table, columns: typed),
                                             arguments: [account]) else { return [] }
            return zip(typed, 0...).compactMap { column, index in
                let records = row[index] as Int? ?? 0
                guard let type = column.type, records > 0 else { return nil }
                return ColumnWarning(column: column.name, type: type, records: records)
            }
        }
    }

    /// Resumes the job's walk where it stopped if its last walk failed or was killed
    /// after storing pages (unless `fresh`); otherwise starts a new walk whose position
    /// count restarts at 0.
    package func startWalk(job: String, account: String, table: String, at time: String, fresh: Bool) async throws -> WalkStart {
        try await pool.write { db in
            let storedPages = try Bool.fetchOne(db, sql: """
                SELECT EXISTS (SELECT 1 FROM \(StoreSchema.pages) WHERE job = ? AND account = ?)
                """, arguments: [job, account]) ?? true
            if !fresh, let row = try Row.fetchOne(db, sql: """
                SELECT started_at, next_page, next_url, next_cursor, next_cursor_is_number, position FROM \(StoreSchema.walks)
                WHERE job = ? AND account = ? AND table_name = ? AND state IN ('failed', 'interrupted', 'running', 'deferred')
                  AND next_page IS NOT NULL
                """, arguments: [job, account, table]) {
                let start = WalkStart(startedAt: row["started_at"], page: row["next_page"], nextURL: row["next_url"],
                                      cursor: row["next_cursor"], position: row["position"],
                                      cursorIsNumber: row["next_cursor_is_number"], storedPages: storedPages)
                if start.isResumable {
                    try db.execute(sql: "UPDATE \(StoreSchema.walks) SET state = 'running', updated_at = ? WHERE job = ? AND account = ?",
                                   arguments: [time, job, account])
                    return start
                }
            }
            try db.execute(sql: """
                INSERT INTO \(StoreSchema.walks) (job, account, table_name, state, started_at, updated_at, pages, next_page, next_url, position)
                VALUES (?, ?, ?, 'running', ?, ?, 0, NULL, NULL, 0)
                ON CONFLICT (job, account) DO UPDATE SET table_name = excluded.table_name, state = 'running',
                  started_at = excluded.started_at, updated_at = excluded.updated_at, pages = 0,
                  next_page = NULL, next_url = NULL, next_cursor = NULL, position = 0, walk_high_water = NULL
                """, arguments: [job, account, table, time, time])
            return WalkStart(startedAt: time, page: nil, nextURL: nil, cursor: nil, position: 0, storedPages: storedPages)
        }
    }

    /// Keeps how a walk ended in `_mirror_walks.state` (`running` while it goes on), and for a
    /// deferred one when it may resume.
    package func finishWalk(job: String, account: String, state: WalkEnding, at time: String,
                           resumeAfter: String? = nil) async throws {
        try await pool.write { db in
            // A complete walk's start is what `incremental: {from: last_run}` takes next.
            try db.execute(sql: """
                UPDATE \(StoreSchema.walks) SET state = ?1, updated_at = ?2, resume_after = ?5,
                  last_complete_start = CASE WHEN ?1 = 'complete' THEN started_at ELSE last_complete_start END
                WHERE job = ?3 AND account = ?4
                """, arguments: [state.rawValue, time, job, account, resumeAfter])
            if state == .complete { try Self.promoteHighWater(job: job, account: account, db: db) }
        }
    }

    /// The job's deferred walk, if its last walk was deferred: when it may resume, and the
    /// `{page}` value it resumes at.
    package func deferral(job: String, account: String) async throws -> (until: String, page: Int?)? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: """
                SELECT resume_after, next_page FROM \(StoreSchema.walks)
                WHERE job = ? AND account = ? AND state = 'deferred' AND resume_after IS NOT NULL
                """, arguments: [job, account]).map { (until: $0["resume_after"], page: $0["next_page"]) }
        }
    }
}
