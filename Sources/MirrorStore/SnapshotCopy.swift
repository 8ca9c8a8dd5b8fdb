import Foundation
import GRDB
import GRDBSQLite
import MirrorModel
import Synchronization

/// Copies one database of the output folder into a new SQLite file for devices: the record
/// tables asked for (one account's rows, when asked) with the views mirror made of them, the
/// index of their downloaded files, `_mirror_snapshot` and, when asked, the stored pages of
/// those tables that `PageLookup` answers the API's URLs from, all read in one read
/// transaction, so that the copy is one committed state even while a run writes. The
/// source is attached read-only: a run is neither blocked by the copy nor blocks it, and
/// closing the copy never checkpoints it.
/// The copy is a plain file in rollback-journal mode, with no `-wal` or `-shm` beside it.
package struct SnapshotCopy {
    /// A file the copy's `_mirror_files` names.
    package struct IndexedFile: Sendable, Equatable {
        /// Relative to the output folder: `files/3f/3fa4…c2.jpg`.
        package let path: String
        package let size: Int
        package let sha256: String
    }

    /// What the copy holds.
    package struct Copied: Sendable {
        /// Each record table, with its rows.
        package var tables: [(name: String, records: Int)]
        /// The last change of the source's feed the copy includes, and the feed's identity.
        package var changesThrough: Int
        package var feed: String
        package var files: [IndexedFile]
    }

    /// Stops a copy going on from another thread: the statement running is interrupted,
    /// and the copy checks between its steps.
    package final class Stop: Sendable {
        private let queue = Mutex<DatabaseQueue?>(nil)
        private let stopped = Atomic<Bool>(false)

        package init() {}

        package func stop() {
            stopped.store(true, ordering: .relaxed)
            queue.withLock { $0?.interrupt() }
        }

        package func check() throws {
            if stopped.load(ordering: .relaxed) { throw CancellationError() }
        }

        fileprivate func watch(_ queue: DatabaseQueue?) {
            self.queue.withLock { $0 = queue }
        }
    }

    /// The source database file and the copy's path.
    package let source: String
    package let destination: String

    package init(source: String, destination: String) {
        self.source = source
        self.destination = destination
    }

    /// The copy's own table: one row per record table, what the copy is and the change of
    /// the feed it holds (a device that applies the feed moves `changes_through` on).
    static let snapshotTable = "_mirror_snapshot"

    /// Makes the copy: the tables of `tables` the source holds (all of them when nil) with
    /// the rows of `account` (all when nil), and with `pages` their stored pages. `keep` is asked, after the rows are copied,
    /// whether each indexed file stays in the index (`--with-files`: whether it is on disk).
    /// `between` runs between the steps of the copy, in its read transaction. Nil, and no
    /// file made, when the source is not a mirror database or holds none of the tables.
    package func write(tables wanted: Set<String>?, account: String?, pages: Bool = false, createdAt: String, format: Int,
                       mirrorVersion: String, stop: Stop, between: () throws -> Void = {}, keep: (IndexedFile) throws -> Bool) throws -> Copied? {
        guard let held = try Self.recordTables(of: source) else { return nil }
        let tables = held.filter { wanted?.contains($0) ?? true }
        guard !tables.isEmpty else { return nil }
        var configuration = Configuration()
        configuration.busyMode = .timeout(TableStore.busyTimeout)
        configuration.foreignKeysEnabled = false
        let queue = try DatabaseQueue(path: destination, configuration: configuration)
        stop.watch(queue)
        defer { stop.watch(nil) }
        return try queue.writeWithoutTransaction { db -> Copied? in
            // The copy is thrown away whole if anything fails: no journal needed while it is made.
            try db.execute(sql: "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF")
            try db.execute(sql: "ATTACH DATABASE ? AS source", arguments: [Self.readOnly(source)])
            defer { try? db.execute(sql: "DETACH DATABASE source") }
            // The source's page size (the store's is 8 KiB), set while the copy is empty: its
            // rows fill the same pages, written in half as many writes as SQLite's default's.
            if let pageSize = try Int.fetchOne(db, sql: "PRAGMA source.page_size") {
                try db.execute(sql: "PRAGMA main.page_size = \(pageSize)")
            }
            var copied: Copied?
            try db.inTransaction(.deferred) {
                copied = try copy(db, tables: tables, wholeSource: tables.count == held.count, account: account,
                                  pages: pages, createdAt: createdAt, format: format, mirrorVersion: mirrorVersion) {
                    try stop.check()
                    try between()
                }
                return .commit
            }
            guard var copied else { return nil }
            var gone: [String] = []
            copied.files = try copied.files.filter { file in
                try stop.check()
                if try keep(file) { return true }
                gone.append(file.path)
                return false
            }
            for path in gone {
                try db.execute(sql: "DELETE FROM main.\(StoreSchema.files) WHERE path = ?", arguments: [path])
            }
            return copied
        }
    }

    /// The record tables of the file at `path`; nil when it is not a mirror database (a
    /// SQLite file of someone else's in the output folder).
    private static func recordTables(of path: String) throws -> [String]? {
        try DatabaseQueue(path: path, configuration: RecordReader.readOnly).read { db in
            guard try db.tableExists(StoreSchema.walks) else { return nil }
            return try String.fetchAll(db, sql: StoreSchema.recordTables)
        }
    }

    /// What `ATTACH` opens the source as: a read-only URI where SQLite takes URIs (it then
    /// never writes to it, not even a checkpoint when the copy closes), else the path.
    static func readOnly(_ path: String) -> String {
        guard sqlite3_compileoption_used("USE_URI") == 1 else { return path }
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var escaped = ""
        for character in absolute {
            switch character {
            case "%": escaped += "%25"
            case "?": escaped += "%3f"
            case "#": escaped += "%23"
            default: escaped.append(character)
            }
        }
        return "file:" + escaped + "?mode=ro"
    }

    /// The copy, inside the transaction that reads the source.
    private func copy(_ db: Database, tables: [String], wholeSource: Bool, account: String?, pages: Bool, createdAt: String,
                      format: Int, mirrorVersion: String, between: () throws -> Void) throws -> Copied {
        // The first read of the source fixes the state the whole copy reads.
        let version = try Int.fetchOne(db, sql: "PRAGMA source.user_version") ?? 0
        guard version <= StoreSchema.migrations.count else { throw StoreSchema.TooNew(version: version) }
        guard version == StoreSchema.migrations.count else { throw Outdated(version: version) }
        let (changesThrough, _) = try ChangeFeed.bounds(db, schema: "source")
        let feed = try String.fetchOne(db, sql: "SELECT feed_id FROM source.\(StoreSchema.feed)") ?? ""
        var copied = Copied(tables: [], changesThrough: changesThrough, feed: feed, files: [])
        for table in tables {
            // The table and its indexes exactly as the source declares them, so that SQLite
            // copies the rows and index entries as they are stored, without decoding them.
            for sql in try String.fetchAll(db, sql: """
                SELECT sql FROM source.sqlite_master WHERE tbl_name = ? AND type IN ('table', 'index') AND sql IS NOT NULL
                ORDER BY type = 'index', name
                """, arguments: [table]) {
                try db.execute(sql: sql)
            }
            // A table with generated columns (`columns:`) names the others: those take no
            // value. Any other is copied with `SELECT *`, which SQLite copies row by row as stored.
            let columns = try Row.fetchAll(db, sql: "SELECT name, hidden FROM pragma_table_xinfo(?, 'source')", arguments: [table])
            let stored = columns.allSatisfy { $0["hidden"] as Int == 0 } ? "*"
                : columns.filter { $0["hidden"] as Int == 0 }.map { "\"\($0["name"] as String)\"" }.joined(separator: ", ")
            let into = stored == "*" ? "" : " (\(stored))"
            if let account {
                try db.execute(sql: "INSERT INTO main.\"\(table)\"\(into) SELECT \(stored) FROM source.\"\(table)\" WHERE account = ?",
                               arguments: [account])
            } else {
                try db.execute(sql: "INSERT INTO main.\"\(table)\"\(into) SELECT \(stored) FROM source.\"\(table)\"")
            }
            // Its views (`explode:`) as the source declares them: they read the copy's rows.
            for sql in try String.fetchAll(db, sql: """
                SELECT m.sql FROM source.\(StoreSchema.views) v JOIN source.sqlite_master m ON m.type = 'view' AND m.name = v.name
                WHERE v.table_name = ? ORDER BY v.name
                """, arguments: [table]) {
                try db.execute(sql: sql)
            }
            copied.tables.append((table, try Int.fetchOne(db, sql: "SELECT count(*) FROM main.\"\(table)\"") ?? 0))
            try between()
        }
        try db.execute(sql: """
            CREATE TABLE main.\(StoreSchema.files) (
              url          TEXT    NOT NULL PRIMARY KEY,
              path         TEXT    NOT NULL,
              size         INTEGER NOT NULL,
              content_type TEXT,
              sha256       TEXT    NOT NULL
            );
            CREATE TABLE main.\(Self.snapshotTable) (
              table_name      TEXT    NOT NULL PRIMARY KEY,
              records         INTEGER NOT NULL,
              changes_through INTEGER NOT NULL,
              feed            TEXT    NOT NULL,
              account         TEXT,
              created_at      TEXT    NOT NULL,
              format          INTEGER NOT NULL,
              mirror_version  TEXT    NOT NULL
            );
            """)
        for (table, records) in copied.tables {
            try db.execute(sql: """
                INSERT INTO main.\(Self.snapshotTable)
                  (table_name, records, changes_through, feed, account, created_at, format, mirror_version)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [table, records, changesThrough, feed, account, createdAt, format, mirrorVersion])
        }
        if account == nil, wholeSource {
            try db.execute(sql: """
                INSERT INTO main.\(StoreSchema.files) SELECT url, path, size, content_type, sha256
                FROM source.\(StoreSchema.files) WHERE status = 'ok'
                """)
        } else {
            // Only the files the copied records name: no other account's, no other table's.
            for table in tables {
                try db.execute(sql: """
                    INSERT OR IGNORE INTO main.\(StoreSchema.files)
                    SELECT f.url, f.path, f.size, f.content_type, f.sha256
                    FROM main."\(table)" r, json_tree(r.record) j, source.\(StoreSchema.files) f
                    WHERE j.type = 'text' AND f.url = j.value AND f.status = 'ok'
                    """)
                try between()
            }
        }
        if pages {
            try copyPages(db, tables: tables, account: account)
            try between()
        }
        copied.files = try Row.fetchAll(db, sql: "SELECT path, size, sha256 FROM main.\(StoreSchema.files) ORDER BY path")
            .map { IndexedFile(path: $0["path"], size: $0["size"], sha256: $0["sha256"]) }
        return copied
    }

    /// The columns of `_mirror_pages` a replayed page is read from (`PageLookup`): the request
    /// as stored (its URL and body with secrets masked), the envelope and headers (stored
    /// masked), the ids in walk order and the next URL. Not the walk's bookkeeping: no job,
    /// cursor or validators.
    static let pageColumns = "url, body, status, fetched_at, request_key, envelope, records_at, ids, table_name, account, "
        + "next_url, headers"

    /// The stored pages of `tables` (of `account` alone, when given) that hold an envelope,
    /// at their rows' ids in the source, so that an answer's entity tag is the source's.
    private func copyPages(_ db: Database, tables: [String], account: String?) throws {
        try db.execute(sql: """
            CREATE TABLE main.\(StoreSchema.pages) (
              url         TEXT    NOT NULL,
              body        TEXT    NOT NULL DEFAULT '',
              status      INTEGER NOT NULL,
              fetched_at  TEXT    NOT NULL,
              request_key TEXT,
              envelope    TEXT,
              records_at  INTEGER,
              ids         TEXT,
              table_name  TEXT,
              account     TEXT    NOT NULL,
              next_url    TEXT,
              headers     TEXT
            );
            CREATE INDEX main.\(StoreSchema.pages)_by_request ON \(StoreSchema.pages) (request_key);
            """)
        var arguments = StatementArguments(tables)
        var only = ""
        if let account {
            only = " AND account = ?"
            arguments += [account]
        }
        try db.execute(sql: """
            INSERT INTO main.\(StoreSchema.pages) (rowid, \(Self.pageColumns))
            SELECT rowid, \(Self.pageColumns) FROM source.\(StoreSchema.pages)
            WHERE envelope IS NOT NULL AND table_name IN (\(databaseQuestionMarks(count: tables.count)))\(only)
            ORDER BY rowid
            """, arguments: arguments)
    }

    /// A source written by an earlier mirror, which has no change feed yet.
    struct Outdated: Error, CustomStringConvertible {
        package let version: Int
        package var description: String {
            "its schema version is \(version), of an earlier mirror: the next `mirror run` on it upgrades it"
        }
    }
}
