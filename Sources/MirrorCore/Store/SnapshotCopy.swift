import Foundation
import GRDB

/// Copies one database of the output folder into a new SQLite file for devices: the record
/// tables asked for (one account's rows, when asked), the index of their downloaded files,
/// and `_mirror_snapshot`, all read in one read transaction, so that the copy is one
/// committed state even while a run writes. The source is only read: a run is neither
/// blocked by the copy nor blocks it. The copy is a plain file in rollback-journal mode,
/// with no `-wal` or `-shm` beside it.
struct SnapshotCopy {
    /// A file the copy's `_mirror_files` names.
    struct IndexedFile: Sendable, Equatable {
        /// Relative to the output folder: `files/3f/3fa4…c2.jpg`.
        let path: String
        let size: Int
        let sha256: String
    }

    /// What the copy holds.
    struct Copied: Sendable {
        /// Each record table, with its rows.
        var tables: [(name: String, records: Int)]
        /// The last change of the source's feed the copy includes.
        var changesThrough: Int
        var files: [IndexedFile]
    }

    /// The source database file and the copy's path.
    let source: String
    let destination: String

    /// The copy's own table: what it is, and the change it holds (a device that applies the
    /// feed moves `changes_through` on).
    static let snapshotTable = "_mirror_snapshot"

    /// Makes the copy: the tables of `tables` the source holds (all of them when nil) with
    /// the rows of `account` (all when nil). `keep` is asked, after the rows are copied,
    /// whether each indexed file stays in the index (`--with-files`: whether it is on disk).
    /// Nil when the source holds none of the tables.
    func write(tables wanted: Set<String>?, account: String?, createdAt: String, format: Int, mirrorVersion: String,
               interrupt: (DatabaseQueue) -> Void = { _ in },
               keep: (IndexedFile) throws -> Bool) throws -> Copied? {
        var configuration = Configuration()
        configuration.busyMode = .timeout(TableStore.busyTimeout)
        configuration.foreignKeysEnabled = false
        let queue = try DatabaseQueue(path: destination, configuration: configuration)
        interrupt(queue)
        return try queue.writeWithoutTransaction { db -> Copied? in
            // The copy is thrown away whole if anything fails: no journal needed while it is made.
            try db.execute(sql: "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF")
            try db.execute(sql: "ATTACH DATABASE ? AS source", arguments: [source])
            defer { try? db.execute(sql: "DETACH DATABASE source") }
            var copied: Copied?
            try db.inTransaction(.deferred) {
                copied = try copy(db, tables: wanted, account: account, createdAt: createdAt, format: format,
                                  mirrorVersion: mirrorVersion)
                return .commit
            }
            guard var copied else { return nil }
            var gone: [String] = []
            copied.files = try copied.files.filter { file in
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

    /// The copy, inside the transaction that reads the source.
    private func copy(_ db: Database, tables wanted: Set<String>?, account: String?, createdAt: String, format: Int,
                      mirrorVersion: String) throws -> Copied? {
        // The first read of the source fixes the state the whole copy reads.
        let version = try Int.fetchOne(db, sql: "PRAGMA source.user_version") ?? 0
        guard version <= StoreSchema.migrations.count else { throw StoreSchema.TooNew(version: version) }
        guard version == StoreSchema.migrations.count else { throw Outdated(version: version) }
        let held = try String.fetchAll(db, sql: StoreSchema.recordTables(in: "source"))
        let tables = held.filter { wanted?.contains($0) ?? true }
        guard !tables.isEmpty else { return nil }
        let (changesThrough, _) = try ChangeFeed.bounds(db, schema: "source")
        var copied = Copied(tables: [], changesThrough: changesThrough, files: [])
        for table in tables {
            try db.execute(sql: StoreSchema.createTable(table))
            if try db.columns(in: table, in: "source").contains(where: { $0.name == "parent_id" }) {
                try db.execute(sql: "ALTER TABLE main.\"\(table)\" ADD COLUMN parent_id TEXT")
                try db.execute(sql: StoreSchema.createParentIndex(table))
            }
            // With no condition and the same columns, SQLite copies the rows and their indexes
            // as they are stored, without decoding them.
            if let account {
                try db.execute(sql: "INSERT INTO main.\"\(table)\" SELECT * FROM source.\"\(table)\" WHERE account = ?",
                               arguments: [account])
            } else {
                try db.execute(sql: "INSERT INTO main.\"\(table)\" SELECT * FROM source.\"\(table)\"")
            }
            copied.tables.append((table, try Int.fetchOne(db, sql: "SELECT count(*) FROM main.\"\(table)\"") ?? 0))
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
              format          INTEGER NOT NULL,
              mirror_version  TEXT    NOT NULL,
              created_at      TEXT    NOT NULL,
              account         TEXT,
              changes_through INTEGER NOT NULL
            );
            """)
        try db.execute(sql: """
            INSERT INTO main.\(Self.snapshotTable) (format, mirror_version, created_at, account, changes_through)
            VALUES (?, ?, ?, ?, ?)
            """, arguments: [format, mirrorVersion, createdAt, account, changesThrough])
        if account == nil, tables.count == held.count {
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
            }
        }
        copied.files = try Row.fetchAll(db, sql: "SELECT path, size, sha256 FROM main.\(StoreSchema.files) ORDER BY path")
            .map { IndexedFile(path: $0["path"], size: $0["size"], sha256: $0["sha256"]) }
        return copied
    }

    /// A source written by an earlier mirror, which has no change feed yet.
    struct Outdated: Error, CustomStringConvertible {
        let version: Int
        var description: String {
            "its schema version is \(version), of an earlier mirror: the next `mirror run` on it upgrades it"
        }
    }
}
