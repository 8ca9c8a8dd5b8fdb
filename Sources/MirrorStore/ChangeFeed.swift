import Foundation
package import GRDB
import GRDBSQLite
import MirrorModel

/// Reads a database's change feed (`_mirror_changes`), read-only, in one read transaction:
/// a run writing meanwhile is not seen half-way, and the high-water mark read with the
/// changes is exactly the last change they include.
package struct ChangeFeed: Sendable {
    /// What asking for the changes since `since` found, besides the changes.
    package struct Mark: Sendable, Equatable {
        /// The mark asked from.
        package let since: Int
        /// The last change the reader has once it applied these: the next `since`.
        package let through: Int
        /// The feed's id: a mark is only good for the feed it came from.
        package let feed: String
        /// Changes read.
        package let count: Int
    }

    /// A mark the feed cannot serve: older than its compacted point, past its end, or of
    /// another feed (the database was made again since). The device needs a new snapshot.
    package struct Unreachable: Error, Sendable, CustomStringConvertible {
        package enum Reason: Sendable {
            case compacted(through: Int)
            case ahead(last: Int)
            case otherFeed(String)
        }

        package let table: String
        package let since: Int
        package let reason: Reason

        package var description: String {
            switch reason {
            case let .compacted(through):
                return "the change feed of '\(table)' was compacted through seq \(through): the changes since \(since) "
                    + "are gone; take a new snapshot"
            case let .ahead(last):
                return "the change feed of '\(table)' ends at seq \(last), before \(since): the database was made "
                    + "again since that mark was taken; take a new snapshot"
            case let .otherFeed(feed):
                return "the change feed of '\(table)' is feed \(feed), not the one that mark came from: the database "
                    + "was made again since; take a new snapshot"
            }
        }
    }

    /// How the latest change of each key is found.
    package enum Strategy: Sendable, Equatable {
        /// SQLite groups the changes by key and sorts the groups by sequence: its sorter
        /// spills to a temporary file, so memory stays small however many changes are read.
        case sorted
        /// One pass over the changes in sequence order, each key's latest change held in
        /// memory; records taken from one pass over the table alongside (`scanTable` true)
        /// or each looked up by its key (false). Nil decides by the sizes.
        case inMemory(scanTable: Bool?)
    }

    package let database: String
    /// Nil picks by the size of the range read: in memory up to `keysInMemory` changes.
    package let strategy: Strategy?

    package init(database: String, strategy: Strategy? = nil) {
        self.database = database
        self.strategy = strategy
    }

    /// Ranges of at most this many changes are read in memory (about 60 bytes a key, and its
    /// bytes); longer ones are sorted by SQLite.
    static let keysInMemory = 1_000_000

    /// The highest change sequence of the database `db` reads, and the point through which
    /// its feed was compacted.
    package static func bounds(_ db: Database, schema: String = "main") throws -> (highWater: Int, compactedThrough: Int) {
        let highWater = try Int.fetchOne(db, sql: "SELECT max(seq) FROM \(schema).\(StoreSchema.changes)") ?? 0
        let compacted = try Int.fetchOne(db, sql: "SELECT compacted_through FROM \(schema).\(StoreSchema.feed)") ?? 0
        return (highWater, compacted)
    }

    /// Calls `body` with each change to `table` after `since` (of `account`'s records only,
    /// when given), in sequence order, at most `limit` of them; a key appears once, with its
    /// latest change and, for an upsert, its record as stored now. `body` gets too the
    /// lookup of a downloaded file's path by its URL.
    package func read(table: String, since: Int, feed expected: String? = nil, account: String?, limit: Int?,
                     _ body: (Change, _ filePath: (String) throws -> String?) throws -> Void) throws -> Mark {
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(path: database, configuration: RecordReader.readOnly)
        } catch {
            throw RecordReader.Failure(description: "cannot open '\(database)': \(error)")
        }
        return try queue.inDatabase { db in
            var mark: Mark?
            try db.inTransaction(.deferred) {
                guard try db.tableExists(table) else {
                    throw RecordReader.Failure(description: "no table '\(table)' in '\(database)'")
                }
                guard try db.tableExists(StoreSchema.changes) else {
                    throw RecordReader.Failure(description: "'\(database)' has no change feed: it was written by an "
                        + "earlier mirror; the next `mirror run` on it adds one")
                }
                let (highWater, compacted) = try Self.bounds(db)
                let feed = try String.fetchOne(db, sql: "SELECT feed_id FROM \(StoreSchema.feed)") ?? ""
                if let expected, expected != feed {
                    throw Unreachable(table: table, since: since, reason: .otherFeed(feed))
                }
                if since < compacted { throw Unreachable(table: table, since: since, reason: .compacted(through: compacted)) }
                if since > highWater { throw Unreachable(table: table, since: since, reason: .ahead(last: highWater)) }
                // A child job's table: each record's parent too.
                let child = try db.columns(in: table).contains { $0.name == "parent_id" }
                let files = try db.tableExists(StoreSchema.files)
                    ? db.makeStatement(sql: StoreSchema.filePath)
                    : nil
                let filePath = { (url: String) throws -> String? in
                    guard let files else { return nil }
                    return try String.fetchOne(files, arguments: [url])
                }
                var count = 0
                var last = since
                let range = Reading(table: table, since: since, account: account, limit: limit, child: child)
                let strategy = self.strategy ?? (highWater - since <= Self.keysInMemory ? .inMemory(scanTable: nil) : .sorted)
                let next = { (change: Change) throws in
                    guard change.seq > last else {
                        throw RecordReader.Failure(description: "the change feed of '\(database)' came out of order at seq \(change.seq)")
                    }
                    last = change.seq
                    try body(change, filePath)
                    count += 1
                }
                switch strategy {
                case .sorted: try Self.readSorted(db, range, database: database, next)
                case let .inMemory(scanTable): try Self.readInMemory(db, range, scanTable: scanTable, database: database, next)
                }
                // Cut by `limit`: the reader goes on after the last change it got.
                mark = Mark(since: since, through: limit.map { count == $0 } == true ? last : highWater, feed: feed, count: count)
                return .commit
            }
            return mark!
        }
    }


    /// What a read asks for.
    struct Reading {
        let table: String
        let since: Int
        let account: String?
        let limit: Int?
        /// The table is a child job's: each record's `parent_id` is read too.
        let child: Bool

        /// `WHERE` of the changes in the range, after `seq > ? AND table_name = ?`, and its arguments.
        var changes: (condition: String, arguments: StatementArguments) {
            guard let account else { return ("", [since, table]) }
            return (" AND account = ?", [since, table, account])
        }

        /// The record's columns: its text and, in a child job's table, its parent's id.
        var columns: String { "record, \(child ? "parent_id" : "NULL")" }
    }

    /// Each key's latest change after the mark, grouped and ordered by SQLite (which takes
    /// `op` from the row whose `seq` is the max), then its record as stored now: looked up
    /// row by row, so that only the keys are sorted, never the records.
    private static func readSorted(_ db: Database, _ range: Reading, database: String, _ next: (Change) throws -> Void) throws {
        let (condition, rangeArguments) = range.changes
        var arguments = rangeArguments
        var limitClause = ""
        if let limit = range.limit {
            limitClause = " LIMIT ?"
            _ = arguments.append(contentsOf: [limit])
        }
        let lookup = { (column: String) in
            "CASE c.op WHEN 'upsert' THEN (SELECT \(column) FROM \"\(range.table)\" t WHERE t.account = c.account AND t.id = c.id) END"
        }
        let statement = try db.makeStatement(sql: """
            SELECT c.seq, c.op, c.account, c.id, \(lookup("record")), \(range.child ? lookup("parent_id") : "NULL")
            FROM (
              SELECT max(seq) AS seq, op, account, id FROM \(StoreSchema.changes)
              WHERE seq > ? AND table_name = ?\(condition) GROUP BY account, id ORDER BY seq\(limitClause)
            ) c
            """)
        try statement.setArguments(arguments)
        defer { withExtendedLifetime(statement) {} }
        let raw = statement.sqliteStatement
        while try step(raw, database) {
            // A row of the feed whose record is not in the table is gone for the reader too.
            let record = sqlite3_column_type(raw, 4) == SQLITE_NULL ? nil : Raw.text(raw, 4)
            let parent = record == nil || sqlite3_column_type(raw, 5) == SQLITE_NULL ? nil : Raw.text(raw, 5)
            try next(Change(seq: Int(sqlite3_column_int64(raw, 0)), account: Raw.text(raw, 2), id: Raw.text(raw, 3),
                            record: record, parentID: parent))
        }
    }

    /// Each key's latest change after the mark, without sorting the feed: one pass over the
    /// changes in sequence order (the feed's primary key) keeps each key's latest change, in
    /// the order keys first appear, which is sequence order unless a key changed again later
    /// (then only the keys' sequence numbers are sorted). When the range is a good part of
    /// the table, a record is taken from one pass over the table in rowid order alongside:
    /// rows are stored, and mostly changed, in the order of their changes, so after a walk
    /// each record is the table's next row; one that is not (changed since out of that
    /// order) is looked up by its key, as every record is for a short range. So the feed
    /// read whole costs about what reading the changes and the table does.
    private static func readInMemory(_ db: Database, _ range: Reading, scanTable: Bool?, database: String,
                                     _ next: (Change) throws -> Void) throws {
        let (condition, arguments) = range.changes
        let changes = try db.makeStatement(sql: """
            SELECT seq, account, id, op = 'upsert' FROM \(StoreSchema.changes) WHERE seq > ? AND table_name = ?\(condition)
            """)
        try changes.setArguments(arguments)
        var keys = KeyTable()
        var repeated = false
        try withExtendedLifetime(changes) {
            let raw = changes.sqliteStatement
            while try step(raw, database) {
                let key = keys.insert(account: Raw.text(raw, 1), id: Raw.text(raw, 2))
                repeated = repeated || !key.new
                keys.seqs[key.index] = Int(sqlite3_column_int64(raw, 0))
                keys.upserts[key.index] = sqlite3_column_int(raw, 3) != 0
            }
        }
        // In sequence order: the order keys came in, unless one changed again later.
        var order = Array(0 ..< keys.count)
        if repeated { order.sort { keys.seqs[$0] < keys.seqs[$1] } }
        if let limit = range.limit, limit < order.count { order.removeLast(order.count - limit) }
        let rows = try Int.fetchOne(db, sql: "SELECT max(rowid) FROM \"\(range.table)\"") ?? 0
        let scanTable = scanTable ?? (rows <= 8 * keys.count)
        // The table in rowid order, which is the order its rows were stored and, mostly, changed:
        // a record is taken from it when it is the next one due, else looked up by its key.
        let table = try db.makeStatement(sql: "SELECT account, id, \(range.columns) FROM \"\(range.table)\" ORDER BY rowid")
        let byKey = try db.makeStatement(sql: "SELECT \(range.columns) FROM \"\(range.table)\" WHERE account = ? AND id = ?")
        try withExtendedLifetime((table, byKey)) {
            let tableRow = table.sqliteStatement
            // The table's current row, not yet taken or passed, and its key's index.
            var onRow = false
            var rowKey: Int?
            var tableEnded = !scanTable
            try keys.withKeys { key in
                for index in order {
                    let (account, id) = key(index)
                    var record: UnsafeBufferPointer<UInt8>?
                    var parent: UnsafeBufferPointer<UInt8>?
                    var lookedUp = false
                    defer { if lookedUp { sqlite3_reset(byKey.sqliteStatement) } }
                    if keys.upserts[index] {
                        // Past the rows of keys not read, or given already (looked up by key).
                        while !tableEnded {
                            if !onRow {
                                guard try step(tableRow, database) else {
                                    tableEnded = true
                                    break
                                }
                                onRow = true
                                // Mostly the row of the key due now: no need to look its key up.
                                let (rowAccount, rowID) = (Raw.text(tableRow, 0), Raw.text(tableRow, 1))
                                rowKey = KeyTable.equal(rowAccount, account) && KeyTable.equal(rowID, id)
                                    ? index : keys.find(account: rowAccount, id: rowID)
                            }
                            if let rowKey, keys.upserts[rowKey], keys.seqs[rowKey] >= keys.seqs[index] { break }
                            onRow = false
                        }
                        if onRow, rowKey == index {
                            onRow = false
                            record = Raw.text(tableRow, 2)
                            parent = sqlite3_column_type(tableRow, 3) == SQLITE_NULL ? nil : Raw.text(tableRow, 3)
                        } else {
                            let statement = byKey.sqliteStatement
                            Raw.bind(statement, 1, unmoving: account)
                            Raw.bind(statement, 2, unmoving: id)
                            lookedUp = true
                            if try step(statement, database) {
                                record = Raw.text(statement, 0)
                                parent = sqlite3_column_type(statement, 1) == SQLITE_NULL ? nil : Raw.text(statement, 1)
                            }
                        }
                    }
                    // A deleted key, or one whose latest change is an upsert of a record gone since
                    // (a row of the feed whose record is not in the table is gone for the reader too).
                    try next(Change(seq: keys.seqs[index], account: account, id: id, record: record, parentID: parent))
                }
            }
        }
    }

    /// Steps `statement`: true on a row, false at the end.
    private static func step(_ statement: OpaquePointer, _ database: String) throws -> Bool {
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code:
            throw RecordReader.Failure(description: "cannot read '\(database)': \(String(cString: sqlite3_errstr(code)))")
        }
    }

    /// Drops the changes before `before` from the feed of the database at `path`; a reader
    /// whose mark is older is then told to take a new snapshot. The last change always stays:
    /// the next one's `seq` follows it. Waits for a run's page commit, never for the run.
    package static func compact(database path: String, before: Int) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(TableStore.busyTimeout)
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try queue.write { db in
            try db.execute(sql: """
                DELETE FROM \(StoreSchema.changes) WHERE seq < ? AND seq < (SELECT max(seq) FROM \(StoreSchema.changes))
                """, arguments: [before])
            try db.execute(sql: "UPDATE \(StoreSchema.feed) SET compacted_through = max(compacted_through, ?)",
                           arguments: [before - 1])
        }
    }

    /// One change of the feed, straight from SQLite's row, valid until the next.
    package struct Change {
        package let seq: Int
        package let account: UnsafeBufferPointer<UInt8>
        package let id: UnsafeBufferPointer<UInt8>
        /// The record as stored now; nil for a deleted one.
        package let record: UnsafeBufferPointer<UInt8>?
        /// In a child job's table, the id of the parent record the record was walked for.
        package let parentID: UnsafeBufferPointer<UInt8>?
    }
}
