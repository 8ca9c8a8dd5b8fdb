import Foundation
import GRDB
import GRDBSQLite
import MirrorJSON
package import MirrorModel

/// Finds the stored page a request asks for among an output folder's databases: the
/// `_mirror_pages` row whose request it is (see `PageRequest`), with an envelope. Each
/// database is opened read-only and nothing is locked.
package enum PageLookup {
    package enum Outcome: Sendable {
        case found(FoundPage)
        /// No page: the stored requests most like it, as targets (`/items?page=2`).
        case missing(closest: [String])
    }

    /// How many stored requests a miss names.
    static let closestCount = 3

    /// The page `request` (with `body`, empty for a GET) asks for. Among several (the same
    /// request stored by two jobs or accounts), the one fetched last.
    ///
    /// The index on `request_key` finds it (see `PageRequest.probes`). Only stored requests
    /// whose key holds a secret (in the path, or in more than two query names) are checked
    /// one by one, their keys read from the index alone. A miss names the stored requests
    /// next to it in key order.
    package static func find(_ request: PageRequest, body: [UInt8], in output: String,
                     connections: ReadConnections) throws -> Outcome {
        var opened: [ReadConnections.Lent] = []
        // Every connection but the answering page's goes back when the lookup ends.
        var answering: Int?
        defer {
            for (index, lent) in opened.enumerated() where index != answering { connections.give(lent) }
        }
        var best: (index: Int, rowid: Int64, fetchedAt: String)?
        func consider(_ index: Int, _ rowid: Int64, _ fetchedAt: String) {
            if best.map({ $0.fetchedAt < fetchedAt }) ?? true { best = (index, rowid, fetchedAt) }
        }
        let probes = request.probes
        for name in RecordReader.databases(in: output) {
            guard let lent = try connections.take((output as NSString).appendingPathComponent(name)) else { continue }
            opened.append(lent)
            let index = opened.count - 1
            try lent.queue.inDatabase { db in
                let rows = try Row.fetchCursor(db.cachedStatement(sql: """
                    SELECT rowid, url, body, fetched_at FROM \(StoreSchema.pages)
                    WHERE request_key IN (\(databaseQuestionMarks(count: probes.count))) AND envelope IS NOT NULL
                    ORDER BY fetched_at DESC
                    """), arguments: StatementArguments(probes))
                while let row = try rows.next() {
                    if request.matches(PageRequest(url: row["url"])), PageRequest.bodyMatches(body, stored: row["body"]) {
                        consider(index, row["rowid"], row["fetched_at"])
                        break
                    }
                }
            }
        }
        if best == nil {
            for (index, lent) in opened.enumerated() {
                try lent.queue.inDatabase { db in
                    let keys = try Row.fetchCursor(db, sql: """
                        SELECT rowid, request_key FROM \(StoreSchema.pages) INDEXED BY \(StoreSchema.pages)_by_request
                        WHERE request_key IS NOT NULL AND instr(request_key, ?) > 0
                        """, arguments: [Redactor.mask])
                    while let key = try keys.next() {
                        guard let row = try Row.fetchOne(db, sql: """
                            SELECT url, body, fetched_at FROM \(StoreSchema.pages) WHERE rowid = ? AND envelope IS NOT NULL
                            """, arguments: [key["rowid"]]),
                            request.matches(PageRequest(url: row["url"])), PageRequest.bodyMatches(body, stored: row["body"]) else {
                            continue
                        }
                        consider(index, key["rowid"], row["fetched_at"])
                    }
                }
            }
        }
        if let best {
            answering = best.index
            return .found(try FoundPage(opened[best.index], connections: connections, rowid: best.rowid))
        }
        return .missing(closest: try closest(to: request, in: opened.map(\.queue)))
    }

    /// The stored requests whose keys are next to `request`'s, most alike first.
    private static func closest(to request: PageRequest, in queues: [DatabaseQueue]) throws -> [String] {
        let key = request.key
        var found: [(score: Int, target: String)] = []
        for queue in queues {
            try queue.inDatabase { db in
                for (comparison, order) in [(">=", "ASC"), ("<", "DESC")] {
                    for row in try Row.fetchAll(db, sql: """
                        SELECT url, request_key FROM \(StoreSchema.pages)
                        WHERE request_key \(comparison) ? AND envelope IS NOT NULL ORDER BY request_key \(order) LIMIT ?
                        """, arguments: [key, closestCount]) {
                        let stored: String = row["request_key"]
                        let score = (PageRequest(url: row["url"]).path == request.path ? 1 << 20 : 0)
                            + zip(key.utf8, stored.utf8).prefix { $0 == $1 }.count
                        found.append((score, PageRequest.target(of: row["url"])))
                    }
                }
            }
        }
        var seen: Set<String> = []
        return found.sorted { $0.score != $1.score ? $0.score > $1.score : $0.target < $1.target }
            .filter { seen.insert($0.target).inserted }.prefix(closestCount).map(\.target)
    }
}

/// A stored page, read in the read transaction it was found in: the records it puts back
/// are those of one moment, however long sending them takes. The transaction ends with
/// `finish()`, or when the page is let go (its connection closes then).
package final class FoundPage: Sendable {
    private let lent: ReadConnections.Lent
    private let connections: ReadConnections
    private var queue: DatabaseQueue { lent.queue }
    /// The page's row in `_mirror_pages`.
    package let rowid: Int64
    /// The request as stored: its URL (secrets masked) and status.
    package let url: String
    package let status: Int
    package let envelope: PageEnvelope
    /// The page's ids in walk order, as `_mirror_pages.ids` keeps them (a JSON array).
    package let ids: [UInt8]
    package let table: String
    package let account: String
    /// The URL the walk went to after this page, secrets masked.
    package let nextURL: String?
    /// Changes whenever any record of the database changes: the change feed's id and last seq.
    package let version: String

    /// The page at `rowid` of the lent connection's database, read in its transaction,
    /// which `finish()` ends, giving the connection back.
    package init(_ lent: ReadConnections.Lent, connections: ReadConnections, rowid: Int64) throws {
        self.lent = lent
        self.connections = connections
        self.rowid = rowid
        let queue = lent.queue
        let database = lent.path
        let row = try queue.inDatabase { db in
            // A database no run has written since headers were kept has no such column. A
            // snapshot has no feed of its own: it names the feed, and the change, it holds.
            var headers = "headers"
            var version = "(SELECT feed_id FROM \(StoreSchema.feed)) AS feed, (SELECT max(seq) FROM \(StoreSchema.changes)) AS seq"
            if try Int.fetchOne(db.cachedStatement(sql: "PRAGMA user_version")) ?? 0 < StoreSchema.headersVersion {
                if try db.tableExists(SnapshotCopy.snapshotTable) {
                    version = "(SELECT min(feed) FROM \(SnapshotCopy.snapshotTable)) AS feed, "
                        + "(SELECT min(changes_through) FROM \(SnapshotCopy.snapshotTable)) AS seq"
                } else {
                    headers = "NULL"
                }
            }
            return try Row.fetchOne(db.cachedStatement(sql: """
                SELECT url, status, envelope, records_at, ids, table_name, account, next_url, \(headers) AS headers,
                  \(version)
                FROM \(StoreSchema.pages) WHERE rowid = ?
                """), arguments: [rowid])
        }
        guard let row else { throw RecordReader.Failure(description: "a stored page of '\(database)' went away") }
        url = row["url"]
        status = row["status"]
        envelope = PageEnvelope(text: Array((row["envelope"] as String).utf8), recordsAt: row["records_at"],
                                headers: PageEnvelope.headers(json: row["headers"]))
        ids = Array(((row["ids"] as String?) ?? "[]").utf8)
        table = row["table_name"]
        account = row["account"]
        nextURL = (row["next_url"] as String?).map { $0.replacingOccurrences(of: #"\$\{[^}]*\}"#, with: Redactor.mask, options: .regularExpression) }
        version = "\(row["feed"] as String? ?? "")-\(row["seq"] as Int64? ?? 0)"
    }

    /// Where reading the records has got to: a byte offset into `ids`.
    package struct Cursor: Sendable {
        package var offset = 0
        package var records = 0
        package var done = false

        package init(offset: Int = 0, records: Int = 0, done: Bool = false) {
            self.offset = offset
            self.records = records
            self.done = done
        }
    }

    /// Appends the records of the ids from `cursor` on to `out`, as the table holds them now
    /// and separated by commas, until `out` holds `budget` bytes or the ids end. An id no
    /// longer stored (deleted since) is left out. With `limit`, the ids end after that many records.
    package func read(_ cursor: inout Cursor, into out: inout [UInt8], budget: Int, limit: Int? = nil) throws {
        let ids = self.ids
        var position = cursor.offset
        var records = cursor.records
        defer {
            cursor.offset = position
            cursor.records = records
        }
        cursor.done = try queue.inDatabase { db in
            let statement = try db.cachedStatement(sql: """
                SELECT record FROM "\(table.replacingOccurrences(of: "\"", with: "\"\""))" WHERE account = ? AND id = ?
                """).sqliteStatement
            let connection = db.sqliteConnection
            defer { sqlite3_reset(statement) }
            Raw.bind(statement, 1, account)
            return try ids.withUnsafeBufferPointer { text in
                while out.count < budget {
                    if let limit, records >= limit { return true }
                    guard let (range, escaped) = Self.nextString(in: text, from: &position) else { return true }
                    let id = escaped ? JSONText.unescape(UnsafeBufferPointer(rebasing: text[range]))
                        : String(decoding: UnsafeBufferPointer(rebasing: text[range]), as: UTF8.self)
                    sqlite3_reset(statement)
                    Raw.bind(statement, 2, id)
                    let code = sqlite3_step(statement)
                    if code == SQLITE_ROW {
                        if records > 0 { out.append(UInt8(ascii: ",")) }
                        out.append(contentsOf: Raw.text(statement, 0))
                        records += 1
                    } else if code != SQLITE_DONE {
                        try Raw.step(statement, db: connection)
                    }
                }
                return false
            }
        }
    }

    /// The next string of the JSON array `text` from `position` on: the range of its
    /// content (between the quotes) and whether it holds an escape; nil at the end.
    private static func nextString(in text: UnsafeBufferPointer<UInt8>, from position: inout Int) -> (Range<Int>, Bool)? {
        while position < text.count, text[position] != UInt8(ascii: "\"") {
            if text[position] == UInt8(ascii: "]") { return nil }
            position += 1
        }
        guard position < text.count else { return nil }
        let start = position + 1
        var index = start
        var escaped = false
        while index < text.count, text[index] != UInt8(ascii: "\"") {
            if text[index] == UInt8(ascii: "\\") {
                escaped = true
                index += 1
            }
            index += 1
        }
        position = index + 1
        return (start ..< min(index, text.count), escaped)
    }

    /// Ends the read transaction and gives the connection back. Called once.
    package func finish() {
        connections.give(lent)
    }
}
