import Foundation
import GRDB

/// A snapshot's databases as a device keeps them up with the change feed: the marks
/// `_mirror_snapshot` holds (one per record table), and the feed's answers applied to a
/// copy as the SQL of docs/devices.md applies `feed.json`.
package enum SnapshotFeed {
    /// Where a record table of a snapshot's database stands in its feed.
    package struct Mark: Sendable, Equatable {
        package let table: String
        package let changesThrough: Int
        package let feed: String
        /// The account the snapshot holds; nil for all.
        package let account: String?
    }

    /// What one answer of the feed (`{"changes":[…],"feed":…,"changes_through":N}`) holds.
    package struct Page: Sendable, Equatable {
        package let changes: Int
        package let changesThrough: Int
        package let feed: String
    }

    /// The marks of `database`'s record tables, by table name.
    package static func marks(of database: String) throws -> [Mark] {
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(path: database, configuration: RecordReader.readOnly)
        } catch {
            throw RecordReader.Failure(description: "cannot open '\(database)': \(error)")
        }
        return try queue.read { db in
            guard try db.tableExists(SnapshotCopy.snapshotTable) else { return [] }
            return try Row.fetchAll(db, sql: """
                SELECT table_name, changes_through, feed, account FROM \(SnapshotCopy.snapshotTable) ORDER BY table_name
                """).map { Mark(table: $0[0], changesThrough: $0[1], feed: $0[2], account: $0[3]) }
        }
    }

    /// Reads one answer of the feed; a body that is not one is said to be so.
    package static func page(_ body: [UInt8]) throws -> Page {
        let queue = try DatabaseQueue()
        return try queue.read { db in
            let text = String(decoding: body, as: UTF8.self)
            guard try Bool.fetchOne(db, sql: "SELECT json_valid(?)", arguments: [text]) == true,
                  let row = try Row.fetchOne(db, sql: """
                      SELECT json_array_length(?1, '$.changes'), ?1 ->> 'changes_through', ?1 ->> 'feed'
                      """, arguments: [text]),
                  let changes = row[0] as Int?, let through = row[1] as Int?, let feed = row[2] as String? else {
                throw RecordReader.Failure(description: "the answer is not a change feed's JSON (changes, feed, changes_through)")
            }
            return Page(changes: changes, changesThrough: through, feed: feed)
        }
    }

    /// Applies `pages`, the feed's answers for each table in the order they came, to
    /// `database` in one transaction: upserts (with `parent_id` in a child job's table),
    /// deletions, then each table's `changes_through` and `records`.
    package static func apply(_ pages: [(table: String, bodies: [[UInt8]])], to database: String) throws {
        let queue = try DatabaseQueue(path: database)
        try queue.write { db in
            for (table, bodies) in pages {
                let quoted = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
                let child = try db.columns(in: table).contains { $0.name == "parent_id" }
                for body in bodies {
                    let doc = String(decoding: body, as: UTF8.self)
                    try db.execute(sql: """
                        INSERT INTO \(quoted) (account, id, record, position, first_seen, last_seen\(child ? ", parent_id" : ""))
                        SELECT c.value ->> 'account', c.value ->> 'id', c.value -> 'record', 0,
                               strftime('%Y-%m-%dT%H:%M:%fZ'), strftime('%Y-%m-%dT%H:%M:%fZ')\(child ? ", c.value ->> 'parent_id'" : "")
                          FROM json_each(?1, '$.changes') c
                         WHERE c.value ->> 'op' = 'upsert'
                        ON CONFLICT (account, id) DO UPDATE SET record = excluded.record,
                           last_seen = excluded.last_seen\(child ? ", parent_id = excluded.parent_id" : "")
                        """, arguments: [doc])
                    try db.execute(sql: """
                        DELETE FROM \(quoted) WHERE (account, id) IN (
                          SELECT c.value ->> 'account', c.value ->> 'id' FROM json_each(?1, '$.changes') c
                           WHERE c.value ->> 'op' = 'delete')
                        """, arguments: [doc])
                    try db.execute(sql: """
                        UPDATE \(SnapshotCopy.snapshotTable) SET changes_through = ?1 ->> 'changes_through',
                               records = (SELECT count(*) FROM \(quoted))
                         WHERE table_name = ?2
                        """, arguments: [doc, table])
                }
            }
        }
    }
}
