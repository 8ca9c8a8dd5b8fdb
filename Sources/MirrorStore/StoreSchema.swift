import Foundation
import GRDB
import MirrorModel

/// SQL names of the on-disk format, in one place. docs/on-disk-format.md documents every column.
package enum StoreSchema {
    package static let pages = "_mirror_pages"
    package static let walks = "_mirror_walks"
    package static let runs = "_mirror_runs"
    package static let files = "_mirror_files"
    static let owners = "_mirror_owners"
    package static let parents = "_mirror_parents"
    package static let parentsQueued = "_mirror_parents_queued"
    package static let changes = "_mirror_changes"
    package static let feed = "_mirror_feed"
    package static let columns = "_mirror_columns"
    package static let views = "_mirror_views"
    /// The path of a downloaded file, by its URL.
    package static let filePath = "SELECT path FROM \(files) WHERE url = ? AND status = 'ok'"

    /// `text` as an SQL string literal.
    package static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }

    /// The schema version from which `_mirror_pages` keeps envelopes (`mirror-pages-envelope-11`).
    static let envelopeVersion = 11
    /// The schema version from which `_mirror_pages` keeps response headers (`mirror-pages-headers-12`).
    static let headersVersion = 12

    /// The record tables of a database, by name: all but SQLite's and mirror's own.
    static let recordTables = recordTables(in: "main")

    /// The record tables of the database attached as `schema`.
    static func recordTables(in schema: String) -> String {
        """
        SELECT name FROM \(schema).sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_mirror\\_%' ESCAPE '\\'
          AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name <> '\(ReservedNames.legacyMigrations)' ORDER BY name
        """
    }

    /// A step of the schema. The file's `PRAGMA user_version` is the number of steps applied.
    struct Migration: Sendable {
        package let name: String
        let apply: @Sendable (Database) throws -> Void
    }

    /// The bookkeeping tables every database file holds, in order. Shipped migrations
    /// never change; a new one goes at the end.
    static let migrations: [Migration] = {
        var migrations: [Migration] = []
        func registerMigration(_ name: String, _ apply: @escaping @Sendable (Database) throws -> Void) {
            migrations.append(Migration(name: name, apply: apply))
        }
        registerMigration("mirror-bookkeeping-1") { db in
            try db.execute(sql: """
                CREATE TABLE \(pages) (
                  job           TEXT    NOT NULL,
                  account       TEXT    NOT NULL,
                  url           TEXT    NOT NULL,
                  page          INTEGER NOT NULL,
                  status        INTEGER NOT NULL,
                  etag          TEXT,
                  last_modified TEXT,
                  records       INTEGER NOT NULL,
                  bytes         INTEGER NOT NULL,
                  fetched_at    TEXT    NOT NULL,
                  PRIMARY KEY (job, account, url)
                );
                CREATE TABLE \(walks) (
                  job         TEXT    NOT NULL,
                  account     TEXT    NOT NULL,
                  table_name  TEXT    NOT NULL,
                  state       TEXT    NOT NULL,
                  started_at  TEXT    NOT NULL,
                  updated_at  TEXT    NOT NULL,
                  pages       INTEGER NOT NULL,
                  next_page   INTEGER,
                  next_url    TEXT,
                  next_cursor TEXT,
                  position    INTEGER NOT NULL,
                  PRIMARY KEY (job, account)
                );
                CREATE TABLE \(runs) (
                  run_id            INTEGER PRIMARY KEY AUTOINCREMENT,
                  job               TEXT    NOT NULL,
                  account           TEXT    NOT NULL,
                  table_name        TEXT    NOT NULL,
                  started_at        TEXT    NOT NULL,
                  finished_at       TEXT    NOT NULL,
                  result            TEXT    NOT NULL,
                  stop_reason       TEXT    NOT NULL,
                  pages             INTEGER NOT NULL,
                  records_new       INTEGER NOT NULL,
                  records_updated   INTEGER NOT NULL,
                  records_unchanged INTEGER NOT NULL,
                  records_rejected  INTEGER NOT NULL,
                  records_pruned    INTEGER NOT NULL,
                  error             TEXT
                );
                """)
        }
        // Pages are keyed by their request (a POST walk has one URL for every page) and
        // keep what a 304 or a fresh page needs to replay them: ids, next page, last page.
        registerMigration("mirror-pages-replay-2") { db in
            try db.execute(sql: """
                CREATE TABLE \(pages)_new (
                  job           TEXT    NOT NULL,
                  account       TEXT    NOT NULL,
                  url           TEXT    NOT NULL,
                  body          TEXT    NOT NULL DEFAULT '',
                  page          INTEGER NOT NULL,
                  status        INTEGER NOT NULL,
                  etag          TEXT,
                  last_modified TEXT,
                  records       INTEGER NOT NULL,
                  bytes         INTEGER NOT NULL,
                  fetched_at    TEXT    NOT NULL,
                  elements      INTEGER,
                  ids           TEXT,
                  next_url      TEXT,
                  next_cursor   TEXT,
                  last_page     INTEGER,
                  PRIMARY KEY (job, account, url, body)
                );
                INSERT INTO \(pages)_new (job, account, url, page, status, etag, last_modified, records, bytes, fetched_at)
                  SELECT job, account, url, page, status, etag, last_modified, records, bytes, fetched_at FROM \(pages);
                DROP TABLE \(pages);
                ALTER TABLE \(pages)_new RENAME TO \(pages);
                ALTER TABLE \(runs) ADD COLUMN pages_not_modified INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE \(runs) ADD COLUMN pages_skipped INTEGER NOT NULL DEFAULT 0;
                """)
        }
        // Files that records point to (`downloads`).
        registerMigration("mirror-files-3") { db in
            try db.execute(sql: """
                CREATE TABLE \(files) (
                  url           TEXT    NOT NULL PRIMARY KEY,
                  job           TEXT    NOT NULL,
                  status        TEXT    NOT NULL,
                  path          TEXT,
                  size          INTEGER,
                  content_type  TEXT,
                  sha256        TEXT,
                  etag          TEXT,
                  last_modified TEXT,
                  http_status   INTEGER,
                  error         TEXT,
                  attempts      INTEGER NOT NULL DEFAULT 0,
                  first_seen    TEXT    NOT NULL,
                  fetched_at    TEXT
                );
                CREATE INDEX \(files)_by_job ON \(files) (job, status);
                ALTER TABLE \(runs) ADD COLUMN files_downloaded INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE \(runs) ADD COLUMN files_failed INTEGER NOT NULL DEFAULT 0;
                """)
        }
        // `stop.total`, kept so that a replayed page still counts towards it.
        registerMigration("mirror-pages-total-4") { db in
            try db.execute(sql: "ALTER TABLE \(pages) ADD COLUMN total INTEGER")
        }
        // The whole outcome of each run, as `--report` writes a job's (JSON).
        registerMigration("mirror-runs-outcome-5") { db in
            try db.execute(sql: "ALTER TABLE \(runs) ADD COLUMN outcome TEXT")
        }
        // Which job stored each id of a table jobs share (`share_table`), so that each
        // prunes only its own.
        registerMigration("mirror-owners-6") { db in
            try db.execute(sql: """
                CREATE TABLE \(owners) (
                  table_name TEXT NOT NULL,
                  account    TEXT NOT NULL,
                  id         TEXT NOT NULL,
                  job        TEXT NOT NULL,
                  PRIMARY KEY (table_name, account, job, id)
                ) WITHOUT ROWID
                """)
        }
        // `incremental`: the `{since}` each walk uses, the highest value of the job's
        // incremental path stored by complete walks and by the walk going on, the start of
        // the last complete walk; when a child job last queued every parent; `deleted` counts.
        registerMigration("mirror-incremental-7") { db in
            try db.execute(sql: """
                ALTER TABLE \(walks) ADD COLUMN since TEXT;
                ALTER TABLE \(walks) ADD COLUMN high_water TEXT;
                ALTER TABLE \(walks) ADD COLUMN high_water_path TEXT;
                ALTER TABLE \(walks) ADD COLUMN walk_high_water TEXT;
                ALTER TABLE \(walks) ADD COLUMN last_complete_start TEXT;
                ALTER TABLE \(walks) ADD COLUMN parents_queued_at TEXT;
                ALTER TABLE \(runs) ADD COLUMN records_deleted INTEGER NOT NULL DEFAULT 0;
                """)
        }
        // Parent records whose child jobs (`parent`) have yet to walk them, in the parent's file.
        registerMigration("mirror-parents-8") { db in
            try db.execute(sql: """
                CREATE TABLE \(parents) (
                  job       TEXT NOT NULL,
                  account   TEXT NOT NULL,
                  parent_id TEXT NOT NULL,
                  state     TEXT NOT NULL,
                  error     TEXT,
                  queued_at TEXT NOT NULL,
                  PRIMARY KEY (job, account, parent_id)
                ) WITHOUT ROWID
                """)
        }
        // Whether a stored next cursor was a JSON number: a POST body sends it back as one
        // after a resume or a 304 replay too.
        registerMigration("mirror-cursor-kind-9") { db in
            try db.execute(sql: """
                ALTER TABLE \(walks) ADD COLUMN next_cursor_is_number INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE \(pages) ADD COLUMN next_cursor_is_number INTEGER NOT NULL DEFAULT 0;
                """)
        }
        // The change feed: every change of every record table's rows, written by triggers in
        // the transaction of the change; records stored before are its first changes, in walk
        // order. `seq` is the rowid: always past the last row, which is never deleted. The
        // feed's random id tells a reader's mark of another feed (a database made again).
        registerMigration("mirror-changes-10") { db in
            try db.execute(sql: """
                CREATE TABLE \(changes) (
                  seq        INTEGER PRIMARY KEY,
                  table_name TEXT    NOT NULL,
                  account    TEXT    NOT NULL,
                  id         TEXT    NOT NULL,
                  op         TEXT    NOT NULL
                );
                CREATE TABLE \(feed) (compacted_through INTEGER NOT NULL, feed_id TEXT NOT NULL);
                INSERT INTO \(feed) (compacted_through, feed_id) VALUES (0, lower(hex(randomblob(8))));
                """)
            for table in try String.fetchAll(db, sql: recordTables) {
                try db.execute(sql: changeTriggers(table))
                try db.execute(sql: """
                    INSERT INTO \(changes) (table_name, account, id, op)
                    SELECT ?, account, id, 'upsert' FROM "\(table)" ORDER BY account, position
                    """, arguments: [table])
            }
        }
        // What `mirror serve` answers a page's request with: the response without its records
        // (the records come from the table), the table they are in, and the request's key;
        // and the index by which it finds a downloaded file.
        registerMigration("mirror-pages-envelope-11") { db in
            try db.execute(sql: """
                ALTER TABLE \(pages) ADD COLUMN table_name TEXT;
                ALTER TABLE \(pages) ADD COLUMN envelope TEXT;
                ALTER TABLE \(pages) ADD COLUMN records_at INTEGER;
                ALTER TABLE \(pages) ADD COLUMN request_key TEXT;
                CREATE INDEX \(pages)_by_request ON \(pages) (request_key);
                CREATE INDEX \(files)_by_path ON \(files) (path);
                """)
        }
        // The response's end-to-end headers, sent again with the page (`Link`, `X-Pagination`).
        registerMigration("mirror-pages-headers-12") { db in
            try db.execute(sql: "ALTER TABLE \(pages) ADD COLUMN headers TEXT")
        }
        // A deferred walk (the API asked for a longer wait than `max_wait`): when it may
        // resume, kept with the walk for the next run and with the run for `status`.
        registerMigration("mirror-deferral-13") { db in
            try db.execute(sql: """
                ALTER TABLE \(walks) ADD COLUMN resume_after TEXT;
                ALTER TABLE \(runs) ADD COLUMN resume_after TEXT;
                """)
        }
        // The generated columns mirror made (`columns:`), by table, each with the definition
        // it was added with: a run changes or drops only these, never a column of a user's own.
        registerMigration("mirror-columns-14") { db in
            try db.execute(sql: """
                CREATE TABLE \(columns) (
                  table_name TEXT NOT NULL,
                  name       TEXT NOT NULL,
                  definition TEXT NOT NULL,
                  PRIMARY KEY (table_name, name)
                ) WITHOUT ROWID
                """)
        }
        // The views mirror made (`explode:`), by record table, each with the statement that
        // created it: a run replaces or drops only these, never a view of a user's own.
        registerMigration("mirror-views-15") { db in
            try db.execute(sql: """
                CREATE TABLE \(views) (
                  table_name TEXT NOT NULL,
                  name       TEXT NOT NULL,
                  definition TEXT NOT NULL,
                  PRIMARY KEY (table_name, name)
                ) WITHOUT ROWID
                """)
        }
        // Records of a run whose typed columns are NULL for a value of another type (`columns:`).
        registerMigration("mirror-runs-column-warnings-16") { db in
            try db.execute(sql: "ALTER TABLE \(runs) ADD COLUMN column_warnings INTEGER NOT NULL DEFAULT 0")
        }
        // When a child job last queued every parent record, in the parent's file, written with the
        // queue: a copy of the parent's file holds both or neither. The child's file keeps the
        // time it saw there (`parents_queue_seen`); `parents_queued_at`, the child-side mark of
        // earlier versions, is read only for files those versions made.
        registerMigration("mirror-parents-queued-17") { db in
            try db.execute(sql: """
                CREATE TABLE \(parentsQueued) (
                  job       TEXT NOT NULL,
                  account   TEXT NOT NULL,
                  queued_at TEXT NOT NULL,
                  PRIMARY KEY (job, account)
                ) WITHOUT ROWID;
                ALTER TABLE \(walks) ADD COLUMN parents_queue_seen TEXT;
                """)
        }
        // The page's `stop.has_more` flag, so that a page answered from its stored copy ends
        // the walk where it ended it.
        registerMigration("mirror-pages-has-more-18") { db in
            try db.execute(sql: "ALTER TABLE \(pages) ADD COLUMN has_more INTEGER")
        }
        return migrations
    }()

    /// A file written by a later mirror, with steps this one does not know.
    struct TooNew: Error, CustomStringConvertible {
        package let version: Int
        package var description: String {
            "its schema version is \(version); this mirror knows \(migrations.count): use a newer mirror"
        }
    }

    /// Brings a database file to the current schema in one transaction. A file of an
    /// earlier release that kept its migrations in `grdb_migrations` has that table read
    /// into `user_version` and dropped.
    static func migrate(_ writer: some DatabaseWriter) throws {
        try writer.write { db in
            var version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
            if version == 0, try db.tableExists(ReservedNames.legacyMigrations) {
                let applied = Set(try String.fetchAll(db, sql: "SELECT identifier FROM \(ReservedNames.legacyMigrations)"))
                version = migrations.prefix { applied.contains($0.name) }.count
                try db.execute(sql: "DROP TABLE \(ReservedNames.legacyMigrations)")
            }
            guard version <= migrations.count else { throw TooNew(version: version) }
            for migration in migrations[version...] {
                try migration.apply(db)
            }
            try db.execute(sql: "PRAGMA user_version = \(migrations.count)")
        }
    }

    /// A record table, exactly as SPEC §4 shows it, plus the index that serves walk order.
    static func createTable(_ table: String) -> String {
        """
        CREATE TABLE IF NOT EXISTS "\(table)" (
          account    TEXT    NOT NULL DEFAULT '',
          id         TEXT    NOT NULL,
          record     TEXT    NOT NULL,
          position   INTEGER NOT NULL,
          first_seen TEXT    NOT NULL,
          last_seen  TEXT    NOT NULL,
          PRIMARY KEY (account, id)
        );
        CREATE INDEX IF NOT EXISTS "\(table)\(ReservedNames.walkOrderSuffix)" ON "\(table)" (account, position);
        """
    }

    /// The triggers that write every change of a record table's rows to the change feed:
    /// an insert, a changed record, a deleted row. Seeing a record again (its position and
    /// `last_seen`) is no change. Appending is all they do: a change that a later one of the
    /// same key supersedes is dropped afterwards, when the feed has grown (`dropSupersededChanges`).
    static func changeTriggers(_ table: String) -> String {
        let name = literal(table)
        let record = "INSERT INTO \(changes) (table_name, account, id, op)"
        return """
            CREATE TRIGGER IF NOT EXISTS "\(changes)_\(table)_insert" AFTER INSERT ON "\(table)" BEGIN
              \(record) VALUES (\(name), new.account, new.id, 'upsert');
            END;
            CREATE TRIGGER IF NOT EXISTS "\(changes)_\(table)_update" AFTER UPDATE OF account, id, record ON "\(table)"
            WHEN old.record IS NOT new.record OR old.account IS NOT new.account OR old.id IS NOT new.id BEGIN
              \(record) SELECT \(name), old.account, old.id, 'delete' WHERE old.account IS NOT new.account OR old.id IS NOT new.id;
              \(record) VALUES (\(name), new.account, new.id, 'upsert');
            END;
            CREATE TRIGGER IF NOT EXISTS "\(changes)_\(table)_delete" AFTER DELETE ON "\(table)" BEGIN
              \(record) VALUES (\(name), old.account, old.id, 'delete');
            END;
            """
    }

    /// In a child job's table, a record that moves to another parent is a change too.
    static func parentChangeTrigger(_ table: String) -> String {
        let name = literal(table)
        return """
            CREATE TRIGGER IF NOT EXISTS "\(changes)_\(table)_parent" AFTER UPDATE OF parent_id ON "\(table)"
            WHEN old.parent_id IS NOT new.parent_id AND old.record IS new.record BEGIN
              INSERT INTO \(changes) (table_name, account, id, op) VALUES (\(name), new.account, new.id, 'upsert');
            END
            """
    }

    /// The index that serves a parent's children, in a child job's table.
    static func createParentIndex(_ table: String) -> String {
        """
        CREATE INDEX IF NOT EXISTS "\(table)\(ReservedNames.byParentSuffix)" ON "\(table)" (account, parent_id, position)
        """
    }
}
