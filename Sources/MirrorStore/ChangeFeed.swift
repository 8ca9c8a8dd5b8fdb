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

    package let database: String

    package init(database: String) {
        self.database = database
    }

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
                // Each key's latest change after the mark (SQLite takes `op` from the row whose
                // `seq` is the max), in sequence order, then its record as stored now: looked up
                // row by row, so that only the keys are sorted, never the records.
                var arguments: StatementArguments = [since, table]
                var accountCondition = ""
                if let account {
                    accountCondition = " AND account = ?"
                    _ = arguments.append(contentsOf: [account])
                }
                var limitClause = ""
                if let limit {
                    limitClause = " LIMIT ?"
                    _ = arguments.append(contentsOf: [limit])
                }
                // A child job's table: each record's parent too.
                let child = try db.columns(in: table).contains { $0.name == "parent_id" }
                let lookup = { (column: String) in
                    "CASE c.op WHEN 'upsert' THEN (SELECT \(column) FROM \"\(table)\" t WHERE t.account = c.account AND t.id = c.id) END"
                }
                let sql = """
                    SELECT c.seq, c.op, c.account, c.id, \(lookup("record")), \(child ? lookup("parent_id") : "NULL")
                    FROM (
                      SELECT max(seq) AS seq, op, account, id FROM \(StoreSchema.changes)
                      WHERE seq > ? AND table_name = ?\(accountCondition) GROUP BY account, id ORDER BY seq\(limitClause)
                    ) c
                    """
                let statement = try db.makeStatement(sql: sql)
                try statement.setArguments(arguments)
                let files = try db.tableExists(StoreSchema.files)
                    ? db.makeStatement(sql: StoreSchema.filePath)
                    : nil
                let filePath = { (url: String) throws -> String? in
                    guard let files else { return nil }
                    return try String.fetchOne(files, arguments: [url])
                }
                let raw = statement.sqliteStatement
                var count = 0
                var last = since
                while true {
                    let code = sqlite3_step(raw)
                    if code == SQLITE_DONE { break }
                    guard code == SQLITE_ROW else {
                        throw RecordReader.Failure(description: "cannot read '\(database)': \(String(cString: sqlite3_errstr(code)))")
                    }
                    let seq = Int(sqlite3_column_int64(raw, 0))
                    guard seq > last else {
                        throw RecordReader.Failure(description: "the change feed of '\(database)' came out of order at seq \(seq)")
                    }
                    last = seq
                    // A row of the feed whose record is not in the table is gone for the reader too.
                    let record = sqlite3_column_type(raw, 4) == SQLITE_NULL ? nil : Raw.text(raw, 4)
                    let parent = record == nil || sqlite3_column_type(raw, 5) == SQLITE_NULL ? nil : Raw.text(raw, 5)
                    try body(Change(seq: last, account: Raw.text(raw, 2), id: Raw.text(raw, 3), record: record,
                                    parentID: parent), filePath)
                    count += 1
                }
                // Cut by `limit`: the reader goes on after the last change it got.
                mark = Mark(since: since, through: limit.map { count == $0 } == true ? last : highWater, feed: feed, count: count)
                return .commit
            }
            return mark!
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
