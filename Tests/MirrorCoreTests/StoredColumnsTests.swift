import Foundation
import GRDB
@testable import MirrorJSON
@testable import MirrorModel
@testable import MirrorStore
import MirrorTestSupport
import Testing

/// `columns:` with `stored: true`, whose changes rebuild the record table: run against a
/// fixture API into real SQLite files.
@Suite("stored generated columns", .timeLimit(.minutes(6)))
struct StoredColumnsTests {
    private static let event1 = #"{"id":"1","venue":{"city":"Oslo"},"price":12,"live":true,"starts":"2024-05-01T18:00:00Z"}"#
    private static let event2 = #"{"id":"2","venue":{"city":"Bergen"},"price":7.5,"live":false,"starts":"2024-05-02T09:30:15.250+02:00"}"#
    private static let event3 = #"{"id":"3","venue":{"city":"Oslo"},"price":30,"live":true,"starts":"now"}"#

    private func rows(_ harness: Harness, _ sql: String) throws -> [[String]] {
        try harness.typedRows(sql)
    }

    /// Every row as it is stored, but for its generated columns: what a rebuild must keep.
    private static let stored = "SELECT rowid, account, id, record, position, first_seen, last_seen, note FROM t_item ORDER BY id"
    /// What the database holds beside the rows: indexes, triggers, views, and mirror's columns.
    private static let schema = """
        SELECT type, name, sql FROM sqlite_master WHERE type <> 'table' UNION ALL
        SELECT 'column', name, definition FROM _mirror_columns ORDER BY 1, 2
        """

    @Test("a stored column is kept in each row; adding, retyping and removing one rebuilds the table and keeps every row, a user's column, index, trigger and view, the change feed's triggers, and writes nothing to the feed")
    func rebuilds() async throws {
        let harness = try Harness()
        let api = EditableAPI([[Self.event1, Self.event2], [Self.event3]])
        try await FixtureServer.with(api.handler) { server in
            let first = try await harness.run(itemsJob("""
                columns:
                  city: { path: venue.city, index: true }
                  price: { path: price, type: integer, index: true, stored: true }
                """), server: server)
            #expect(first.jobs[0].error == nil)
            // hidden 3: stored; 2: virtual.
            #expect(try rows(harness, "SELECT name, type, hidden FROM pragma_table_xinfo('t_item') WHERE hidden <> 0") == [
                ["text:city", "text:", "integer:2"], ["text:price", "text:", "integer:3"],
            ])
            #expect(try rows(harness, "SELECT id, city, price FROM t_item ORDER BY id") == [
                ["text:1", "text:Oslo", "integer:12"], ["text:2", "text:Bergen", "null"], ["text:3", "text:Oslo", "integer:30"],
            ])
            #expect(first.jobs[0].columnWarnings == [ColumnWarning(column: "price", type: .integer, records: 1)])
            // The table was empty: its stored column was there before the walk, so no rebuild copied its rows.
            #expect(try rows(harness, "PRAGMA freelist_count") == [["integer:0"]])
            // A user's column, index, trigger, a table the trigger writes to, and a view.
            try await harness.database("t_item.sqlite").write { db in
                try db.execute(sql: """
                    ALTER TABLE t_item ADD COLUMN note TEXT;
                    UPDATE t_item SET note = 'mine' WHERE id = '2';
                    CREATE INDEX my_index ON t_item (note);
                    CREATE TABLE my_log (id TEXT);
                    CREATE TRIGGER my_trigger AFTER UPDATE OF note ON t_item BEGIN INSERT INTO my_log VALUES (new.id); END;
                    CREATE VIEW my_view AS SELECT id, city, note FROM t_item;
                    """)
            }
            let rowsBefore = try rows(harness, Self.stored)
            let feed = try rows(harness, "SELECT * FROM _mirror_changes ORDER BY seq")
            #expect(feed.count == 3)
            let schemaBefore = try rows(harness, Self.schema)

            // price now real, still stored; live added, stored: the table is made again.
            let changed = itemsJob("""
                columns:
                  city: { path: venue.city, index: true }
                  price: { path: price, type: real, index: true, stored: true }
                  live: { path: live, type: boolean, stored: true }
                """)
            // The table made again as a run prepares it, before its walk: every row as it was.
            let store = try TableStore(path: harness.output + "/t_item.sqlite")
            try await store.prepare(table: "t_item", columns: try harness.load(changed, server: server).jobs[0].columns)
            #expect(try rows(harness, Self.stored) == rowsBefore)
            #expect(try rows(harness, "SELECT * FROM _mirror_changes ORDER BY seq") == feed)
            #expect(try rows(harness, "SELECT name, hidden FROM pragma_table_xinfo('t_item') WHERE name NOT IN "
                + "('account', 'id', 'record', 'position', 'first_seen', 'last_seen')") == [
                ["text:city", "integer:2"], ["text:note", "integer:0"], ["text:price", "integer:3"], ["text:live", "integer:3"],
            ])
            #expect(try rows(harness, "SELECT id, city, price, live, note FROM t_item ORDER BY id") == [
                ["text:1", "text:Oslo", "real:12.0", "integer:1", "null"],
                ["text:2", "text:Bergen", "real:7.5", "integer:0", "text:mine"],
                ["text:3", "text:Oslo", "real:30.0", "integer:1", "null"],
            ])
            // Every index, trigger and view is there again, as it was; price's index and column are the new ones.
            let schemaAfter = try rows(harness, Self.schema)
            let real = GeneratedColumns.definition(RecordColumn(name: "price", path: JSONPath("price")!, type: .real, stored: true))
            let live = GeneratedColumns.definition(RecordColumn(name: "live", path: JSONPath("live")!, type: .boolean, stored: true))
            #expect(schemaAfter.filter { $0[0] == "text:column" } == [
                ["text:column", "text:city", "text:" + GeneratedColumns.definition(RecordColumn(name: "city", path: JSONPath("venue.city")!, index: true))],
                ["text:column", "text:live", "text:" + live],
                ["text:column", "text:price", "text:" + real],
            ])
            #expect(schemaAfter.filter { $0[0] != "text:column" } == schemaBefore.filter { $0[0] != "text:column" })
            #expect(try rows(harness, "SELECT sql LIKE '%\"price\" GENERATED ALWAYS AS (% STORED%' FROM sqlite_master WHERE name = 't_item'")
                == [["integer:1"]])
            #expect(try rows(harness, "SELECT id, city, note FROM my_view ORDER BY id") == [
                ["text:1", "text:Oslo", "null"], ["text:2", "text:Bergen", "text:mine"], ["text:3", "text:Oslo", "null"],
            ])
            let second = try await harness.run(changed, server: server)
            #expect(second.jobs[0].error == nil)
            #expect(second.jobs[0].records.unchanged == 3)
            #expect(second.jobs[0].columnWarnings == nil)
            #expect(try rows(harness, Self.schema) == schemaAfter)
            let plan = try await harness.database("t_item.sqlite").read { db in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT id FROM t_item WHERE price = 7.5").map { $0["detail"] as String }
            }
            #expect(plan == [#"SEARCH t_item USING INDEX t_item.price (price=?)"#])

            // The triggers work on the new table: a changed record is in the feed, the user's trigger fires.
            api.set([[Self.event1, Self.event2.replacingOccurrences(of: "Bergen", with: "Stavanger")], [Self.event3]])
            _ = try await harness.run(changed, server: server)
            #expect(try rows(harness, "SELECT table_name, id, op FROM _mirror_changes ORDER BY seq").suffix(1) == [
                ["text:t_item", "text:2", "text:upsert"],
            ])
            try await harness.database("t_item.sqlite").write { db in try db.execute(sql: "UPDATE t_item SET note = 'x' WHERE id = '3'") }
            #expect(try rows(harness, "SELECT id FROM my_log") == [["text:3"]])
            let feedAfterEdit = try rows(harness, "SELECT * FROM _mirror_changes ORDER BY seq")

            // The same columns again: nothing is made again.
            let version = try rows(harness, "PRAGMA schema_version")
            _ = try await harness.run(changed, server: server)
            #expect(try rows(harness, "PRAGMA schema_version") == version)

            // The stored columns removed: the table is made again without them.
            let third = try await harness.run(itemsJob("""
                columns:
                  city: { path: venue.city, index: true }
                """), server: server)
            #expect(third.jobs[0].error == nil)
            #expect(try rows(harness, "SELECT name, hidden FROM pragma_table_xinfo('t_item') WHERE hidden <> 0 OR name = 'note'") == [
                ["text:city", "integer:2"], ["text:note", "integer:0"],
            ])
            #expect(try rows(harness, "SELECT id, city, note FROM t_item ORDER BY id") == [
                ["text:1", "text:Oslo", "null"], ["text:2", "text:Stavanger", "text:mine"], ["text:3", "text:Oslo", "text:x"],
            ])
            #expect(try rows(harness, "SELECT * FROM _mirror_changes ORDER BY seq") == feedAfterEdit)
            #expect(try rows(harness, "SELECT name FROM sqlite_master WHERE tbl_name = 't_item' AND type <> 'table' ORDER BY name") == [
                ["text:_mirror_changes_t_item_delete"], ["text:_mirror_changes_t_item_insert"], ["text:_mirror_changes_t_item_update"],
                ["text:my_index"], ["text:my_trigger"], ["text:sqlite_autoindex_t_item_1"], ["text:t_item.city"],
                ["text:t_item_walk_order"],
            ])
            #expect(try rows(harness, "SELECT name FROM sqlite_master WHERE name LIKE '\\_mirror\\_rebuild%' ESCAPE '\\'") == [])
        }
    }
}
