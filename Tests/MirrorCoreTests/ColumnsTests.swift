import Foundation
import GRDB
@testable import MirrorJSON
@testable import MirrorJobFile
@testable import MirrorModel
@testable import MirrorStore
@testable import MirrorExport
import MirrorTestSupport
import Synchronization
import Testing

/// `columns:`: generated columns of a record table, run against a fixture API into real
/// SQLite files.
@Suite("generated columns", .timeLimit(.minutes(6)))
struct ColumnsTests {
    private func rows(_ harness: Harness, _ sql: String, _ arguments: StatementArguments = []) throws -> [[String]] {
        try harness.typedRows(sql, arguments)
    }

    private func count(_ harness: Harness, _ sql: String) throws -> Int {
        try harness.database("t_item.sqlite").read { db in try Int.fetchOne(db, sql: sql) ?? -1 }
    }

    private static let event1 = #"{"id":"1","venue":{"city":"Oslo"},"price":12,"rating":4.5,"live":true,"starts":"2024-05-01T18:00:00Z"}"#
    private static let event2 = #"{"id":"2","venue":{"city":"Bergen"},"price":7,"rating":3,"live":false,"starts":"2024-05-02T09:30:15.250+02:00"}"#
    private static let event3 = #"{"id":"3","venue":{"city":"Oslo"},"price":30,"rating":5.0,"live":true,"starts":"2024-06-10T20:00Z"}"#

    private static let fiveColumns = """
        columns:
          city: { path: venue.city, index: true }
          price: { path: price, type: integer, index: true }
          rating: { path: rating, type: real }
          live: { path: live, type: boolean }
          starts: { path: starts, type: time }
        """

    @Test("a first walk fills its table without the columns and their indexes and makes them once its pages are stored; a later walk keeps them")
    func indexesAfterFirstWalk() async throws {
        let harness = try Harness()
        let api = EditableAPI([[Self.event1], [Self.event2], [Self.event3]])
        // The rows and the column indexes of the file, as each request of the walk finds them.
        let seen = Mutex<[(rows: Int, indexes: [String], columns: Int)]>([])
        let handler = api.handler
        let path = harness.output + "/t_item.sqlite"
        let watching: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
            let found = try? await DatabaseQueue(path: path, configuration: RecordReader.readOnly).read { db in
                (rows: try Int.fetchOne(db, sql: "SELECT count(*) FROM t_item") ?? 0,
                 indexes: try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 't\\_item.%' ESCAPE '\\' ORDER BY name"),
                 columns: try Int.fetchOne(db, sql: "SELECT count(*) FROM pragma_table_xinfo('t_item') WHERE hidden <> 0") ?? -1)
            }
            seen.withLock { $0.append(found ?? (rows: -1, indexes: ["unreadable"], columns: -1)) }
            return await handler(request)
        }
        // One request at a time: every request comes before the walk ends, none read ahead past
        // it is answered while the columns are being made.
        try await FixtureServer.with(watching) { server in
            let summary = try await harness.run(itemsJob(Self.fiveColumns + "\nconcurrency: 1"), server: server)
            #expect(summary.jobs[0].error == nil)
        }
        // Pages were stored while the walk went on, and no request found a generated column or its index.
        let first = seen.withLock { $0 }
        #expect(first.contains { $0.rows > 0 })
        #expect(first.allSatisfy { $0.rows >= 0 && $0.indexes.isEmpty && $0.columns == 0 })
        #expect(try rows(harness, "SELECT count(*) FROM pragma_table_xinfo('t_item') WHERE hidden = 2") == [["integer:5"]])
        #expect(try rows(harness, "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 't\\_item.%' ESCAPE '\\' ORDER BY name")
            == [["text:t_item.city"], ["text:t_item.price"]])
        #expect(try rows(harness, "SELECT id FROM t_item WHERE city = 'Oslo' ORDER BY id") == [["text:1"], ["text:3"]])

        seen.withLock { $0 = [] }
        try await FixtureServer.with(watching) { server in
            let summary = try await harness.run(itemsJob(Self.fiveColumns), server: server)
            #expect(summary.jobs[0].error == nil)
        }
        let second = seen.withLock { $0 }
        #expect(!second.isEmpty && second.allSatisfy { $0.rows == 3 && $0.indexes == ["t_item.city", "t_item.price"] && $0.columns == 5 })
        #expect(try count(harness, "SELECT count(*) FROM t_item") == 3)
    }

    @Test("five columns, two indexed: each selects exact values, and a query by city, with or without the account, uses its index")
    func fiveColumns() async throws {
        let harness = try Harness()
        let api = EditableAPI([[Self.event1, Self.event2], [Self.event3]])
        try await FixtureServer.with(api.handler) { server in
            let summary = try await harness.run(itemsJob(Self.fiveColumns), server: server)
            #expect(summary.jobs[0].error == nil)
        }
        #expect(try rows(harness, "SELECT id, city, price, rating, live, starts FROM t_item ORDER BY id") == [
            ["text:1", "text:Oslo", "integer:12", "real:4.5", "integer:1", "text:2024-05-01T18:00:00Z"],
            ["text:2", "text:Bergen", "integer:7", "real:3.0", "integer:0", "text:2024-05-02T09:30:15.250+02:00"],
            ["text:3", "text:Oslo", "integer:30", "real:5.0", "integer:1", "text:2024-06-10T20:00Z"],
        ])
        #expect(try rows(harness, "SELECT id FROM t_item WHERE account = '' AND city = ? ORDER BY id", ["Oslo"])
            == [["text:1"], ["text:3"]])
        #expect(try rows(harness, "SELECT id FROM t_item WHERE price = 7") == [["text:2"]])
        #expect(try rows(harness, "SELECT id FROM t_item WHERE rating > 4 ORDER BY id") == [["text:1"], ["text:3"]])
        #expect(try rows(harness, "SELECT id FROM t_item WHERE live = 0") == [["text:2"]])
        #expect(try rows(harness, "SELECT id FROM t_item WHERE starts >= '2024-06' ORDER BY id") == [["text:3"]])
        let plan = try await harness.database("t_item.sqlite").read { db in
            try ["SELECT id FROM t_item WHERE city = ?", "SELECT id FROM t_item WHERE account = ? AND city = ?"].map { sql in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: StatementArguments(sql.contains("account") ? ["", "Oslo"] : ["Oslo"]))
                    .map { $0["detail"] as String }
            }
        }
        #expect(plan == [[#"SEARCH t_item USING INDEX t_item.city (city=?)"#],
                         [#"SEARCH t_item USING INDEX t_item.city (city=? AND account=?)"#]])
        #expect(try rows(harness, "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND name LIKE 't\\_item.%' ESCAPE '\\' ORDER BY name") == [
            ["text:t_item.city", #"text:CREATE INDEX "t_item.city" ON "t_item" ("city", account)"#],
            ["text:t_item.price", #"text:CREATE INDEX "t_item.price" ON "t_item" ("price", account)"#],
        ])
        // The table's own columns, then the generated ones (hidden 2: virtual), as PRAGMA table_xinfo lists them.
        #expect(try rows(harness, "SELECT name, type, hidden FROM pragma_table_xinfo('t_item') WHERE hidden = 2") == [
            ["text:city", "text:", "integer:2"], ["text:price", "text:", "integer:2"], ["text:rating", "text:", "integer:2"],
            ["text:live", "text:INTEGER", "integer:2"], ["text:starts", "text:TEXT", "integer:2"],
        ])
    }

    @Test("a field whose type drifts between pages: every record is stored, the column is NULL for the odd ones, and those written are counted as warnings")
    func drift() async throws {
        let harness = try Harness()
        // The pages after the first, the same in every run.
        let rest = [
            [#"{"id":"c","n":5.5,"t":null,"b":1,"w":"2024-13-02T03:04:05Z","r":true}"#,
             #"{"id":"d","n":1e3,"t":["x"],"b":null,"w":"now","r":{"v":1}}"#],
            [#"{"id":"e","n":{"v":5},"t":{"v":"x"},"b":false,"w":"2024-01-02T03:04:05Zjunk","r":-0.5}"#, #"{"id":"f"}"#],
        ]
        let api = EditableAPI([
            [#"{"id":"a","n":5,"t":"x","b":true,"w":"2024-01-02T03:04:05Z","r":2}"#,
             #"{"id":"b","n":"5","t":5,"b":"true","w":"2024-01-02","r":"2.5"}"#],
        ] + rest)
        let job = itemsJob("""
            columns:
              n: { path: n, type: integer }
              t: { path: t, type: text }
              b: { path: b, type: boolean }
              w: { path: w, type: time, stored: true }
              r: { path: r, type: real }
              any: t
            """)
        // Each typed column's NULLs where the record holds a value, a JSON null aside; the untyped column has none.
        let expected = [ColumnWarning(column: "n", type: .integer, records: 4), ColumnWarning(column: "t", type: .text, records: 3),
                        ColumnWarning(column: "b", type: .boolean, records: 2), ColumnWarning(column: "w", type: .time, records: 4),
                        ColumnWarning(column: "r", type: .real, records: 3)]
        // A second run writes no record, and warns of none; a third writes "a" and "b" changed; a fourth adds a
        // typed column, whose values are counted in every stored record.
        let changed = try await FixtureServer.with(api.handler) { server in
            let first = try await harness.run(job, server: server)
            #expect(first.jobs[0].error == nil)
            #expect(first.jobs[0].columnWarnings == expected)
            #expect(first.jobs[0].records == .init(new: 6, updated: 0, unchanged: 0, rejected: 0, pruned: 0))
            let second = try await harness.run(job, server: server)
            #expect(second.jobs[0].columnWarnings == nil)
            #expect(second.jobs[0].records == .init(new: 0, updated: 0, unchanged: 6, rejected: 0, pruned: 0))
            api.set([
                [#"{"id":"a","n":"6","t":"x","b":true,"w":"2024-01-02T03:04:05Z","r":2}"#,
                 #"{"id":"b","n":5,"t":"y","b":"true","w":"2024-01-02","r":"2.5"}"#],
            ] + rest)
            let third = try await harness.run(job, server: server)
            #expect(third.jobs[0].columnWarnings == [ColumnWarning(column: "n", type: .integer, records: 1),
                                                     ColumnWarning(column: "b", type: .boolean, records: 1),
                                                     ColumnWarning(column: "w", type: .time, records: 1),
                                                     ColumnWarning(column: "r", type: .real, records: 1)])
            let added = itemsJob("""
                columns:
                  n: { path: n, type: integer }
                  t: { path: t, type: text }
                  b: { path: b, type: boolean }
                  w: { path: w, type: time, stored: true }
                  r: { path: r, type: real }
                  any: t
                  n_real: { path: n, type: real }
                """)
            return try await harness.run(added, server: server)
        }
        #expect(changed.jobs[0].columnWarnings == [ColumnWarning(column: "n_real", type: .real, records: 2)])
        // The stored records' NULLs where the record holds a value, by SQL, column by column.
        for (column, path, records) in [("n", "n", 4), ("t", "t", 2), ("b", "b", 2), ("w", "w", 4), ("r", "r", 3), ("n_real", "n", 2)] {
            #expect(try count(harness, "SELECT count(*) FROM t_item WHERE \(column) IS NULL "
                + "AND json_type(record, '$.\(path)') NOT IN ('null')") == records, "\(column)")
        }
        #expect(try rows(harness, "SELECT column_warnings, json_extract(outcome, '$.column_warnings') FROM _mirror_runs ORDER BY run_id") == [
            ["integer:16", #"text:[{"column":"n","records":4,"type":"integer"},{"column":"t","records":3,"type":"text"},"#
                + #"{"column":"b","records":2,"type":"boolean"},{"column":"w","records":4,"type":"time"},{"column":"r","records":3,"type":"real"}]"#],
            ["integer:0", "null"],
            ["integer:4", #"text:[{"column":"n","records":1,"type":"integer"},{"column":"b","records":1,"type":"boolean"},"#
                + #"{"column":"w","records":1,"type":"time"},{"column":"r","records":1,"type":"real"}]"#],
            ["integer:2", #"text:[{"column":"n_real","records":2,"type":"real"}]"#],
        ])
        #expect(try harness.ids() == ["a", "b", "c", "d", "e", "f"])
        #expect(try rows(harness, "SELECT id, n, t, b, w, r, any FROM t_item ORDER BY id") == [
            ["text:a", "null", "text:x", "integer:1", "text:2024-01-02T03:04:05Z", "real:2.0", "text:x"],
            ["text:b", "integer:5", "text:y", "null", "null", "null", "text:y"],
            ["text:c", "null", "null", "null", "null", "null", "null"],
            ["text:d", "null", "null", "null", "null", "null", #"text:["x"]"#],
            ["text:e", "null", "null", "integer:0", "null", "real:-0.5", #"text:{"v":"x"}"#],
            ["text:f", "null", "null", "null", "null", "null", "null"],
        ])
    }

    @Test("the warnings counted as pages are read are the NULLs SQLite's columns give, for every type, path and kind of value")
    func warningsAgreeWithSQL() async throws {
        let harness = try Harness()
        let values = ["5", "-0", "5.5", "1e3", "1E-2", "12345678901234567890", #""5""#, #""""#, #""2024-01-02T03:04:05Z""#,
                      #""2024-01-02T03:04""#, #""2024-01-02""#, #""\u0032024-01-02T03:04:05Z""#, #""now""#, "true", "false",
                      "null", #"{"v":1}"#, "[1]"]
        // Each value at a key, a nested key, an array's first and last element, a key with a space, a key after one
        // written with escapes (which only a parse reads), and the first of a duplicate key; and nowhere at all.
        var records = values.enumerated().map { index, value in
            #"{"id":"\#(index)","v":\#(value),"o":{"x":[],"v":\#(value)},"l":[\#(value),"pad",\#(value)],"#
                + #""a b":\#(value),"\u0065x":1,"e":\#(value),"d":\#(value),"d":"x"}"#
        }
        records.append(#"{"id":"none","o":{"v":null},"l":[]}"#)
        let paths = [("v", "v", "$.v"), ("o", "o.v", "$.o.v"), ("first", "l.0", "$.l[0]"), ("last", "l.-1", "$.l[#-1]"),
                     ("space", "'/a b'", #"$."a b""#), ("escaped", "e", "$.e"), ("dup", "d", "$.d")]
        var yaml = "columns:\n"
        for (name, path, _) in paths {
            for type in RecordColumn.Kind.allCases { yaml += "  \(name)_\(type.rawValue): { path: \(path), type: \(type.rawValue) }\n" }
        }
        let api = EditableAPI([records])
        let summary = try await FixtureServer.with(api.handler) { server in try await harness.run(itemsJob(yaml), server: server) }
        #expect(summary.jobs[0].error == nil)
        let counted = Dictionary(uniqueKeysWithValues: (summary.jobs[0].columnWarnings ?? []).map { ($0.column, $0.records) })
        var found = 0
        for (name, _, sqlPath) in paths {
            for type in RecordColumn.Kind.allCases {
                let column = "\(name)_\(type.rawValue)"
                let nulls = try count(harness, "SELECT count(*) FROM t_item WHERE \"\(column)\" IS NULL "
                    + "AND json_type(record, '\(sqlPath)') <> 'null'")
                #expect(counted[column] ?? 0 == nulls, "\(column)")
                found += nulls
            }
        }
        // Of the 17 values that are not null, at each of the 7 paths: 14 are no integer (3 are), 11 no real (6
        // numbers), 10 no text (7 strings), 15 no boolean, 14 no time (3 are).
        #expect(found == 7 * (14 + 11 + 10 + 15 + 14))
    }

    @Test("integers of 19 and 20 digits keep every digit; numbers with a point or an exponent are no integers")
    func bigIntegers() async throws {
        let harness = try Harness()
        let values = ["1234567890123456789", "12345678901234567890", "-12345678901234567890", "9223372036854775807",
                      "9223372036854775808", "-9223372036854775808", "1e3", "1.0", "1.5"]
        let records = values.enumerated().map { #"{"id":"\#($0.offset)","n":\#($0.element)}"# }
        let api = EditableAPI([records])
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(itemsJob("""
                columns:
                  big: { path: n, type: integer, index: true }
                  raw: n
                """), server: server)
        }
        #expect(try rows(harness, "SELECT big, raw FROM t_item ORDER BY CAST(id AS INTEGER)") == [
            ["integer:1234567890123456789", "integer:1234567890123456789"],
            ["text:12345678901234567890", "text:12345678901234567890"],
            ["text:-12345678901234567890", "text:-12345678901234567890"],
            ["integer:9223372036854775807", "integer:9223372036854775807"],
            ["text:9223372036854775808", "text:9223372036854775808"],
            ["integer:-9223372036854775808", "integer:-9223372036854775808"],
            ["null", "real:1000.0"],
            ["null", "real:1.0"],
            ["null", "real:1.5"],
        ])
        #expect(try rows(harness, "SELECT id FROM t_item WHERE account = '' AND big = '12345678901234567890'") == [["text:1"]])
    }

    @Test("paths with array indexes and keys that need quotes")
    func oddKeys() async throws {
        let harness = try Harness()
        let api = EditableAPI([[#"{"id":"1","tags":["a","b","c"],"a b":{"c.d":"dotted","$x":7},"2fa":true,"k'q":"apostrophe"}"#]])
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(itemsJob("""
                columns:
                  first_tag: tags.0
                  last_tag: tags.-1
                  dotted: "/a b/c.d"
                  dollar: "/a b/$x"
                  two_factor: { path: 2fa, type: boolean }
                  quote: "k'q"
                """), server: server)
        }
        #expect(try rows(harness, "SELECT first_tag, last_tag, dotted, dollar, two_factor, quote FROM t_item") == [
            ["text:a", "text:c", "text:dotted", "integer:7", "integer:1", "text:apostrophe"],
        ])
        #expect(RecordColumn.sqlitePath(JSONPath("/a b/c.d")!) == .success(#"$."a b"."c.d""#))
        #expect(RecordColumn.sqlitePath(JSONPath("tags.-1")!) == .success("$.tags[#-1]"))
        #expect(RecordColumn.sqlitePath(JSONPath(".")!) == .success("$"))
        #expect(RecordColumn.sqlitePath(JSONPath("/a\"b")!) == .failure(.unquotable("a\"b")))
        #expect(RecordColumn.sqlitePath(JSONPath("tags.*")!) == .failure(.manyValues))
    }

    @Test("changing columns between runs adds, retypes and drops them: every record and the feed's rows stay, a user's own column too")
    func migration() async throws {
        let harness = try Harness()
        let api = EditableAPI([[Self.event1, Self.event2], [Self.event3]])
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(itemsJob("""
                columns:
                  city: { path: venue.city, index: true }
                  price: { path: price, type: integer, index: true }
                  rating: rating
                """), server: server)
            let feed = try count(harness, "SELECT count(*) FROM _mirror_changes")
            #expect(feed == 3)
            // A column and an index of a user's own.
            try await harness.database("t_item.sqlite").write { db in
                try db.execute(sql: """
                    ALTER TABLE t_item ADD COLUMN note TEXT;
                    UPDATE t_item SET note = 'mine' WHERE id = '2';
                    ALTER TABLE t_item ADD COLUMN mine GENERATED ALWAYS AS (json_extract(record, '$.live')) VIRTUAL;
                    CREATE INDEX my_index ON t_item (mine);
                    """)
            }
            let feedAfterUser = try count(harness, "SELECT count(*) FROM _mirror_changes")

            let changed = itemsJob("""
                columns:
                  city: { path: venue.city, index: true }
                  price: { path: price, type: real }
                  live: { path: live, type: boolean, index: true }
                """)
            let second = try await harness.run(changed, server: server)
            #expect(second.jobs[0].error == nil)
            #expect(second.jobs[0].records.unchanged == 3)
            #expect(try harness.ids() == ["1", "2", "3"])
            #expect(try count(harness, "SELECT count(*) FROM _mirror_changes") == feedAfterUser)
            #expect(try rows(harness, "SELECT name, hidden FROM pragma_table_xinfo('t_item') WHERE name NOT IN "
                + "('account', 'id', 'record', 'position', 'first_seen', 'last_seen')") == [
                ["text:city", "integer:2"], ["text:note", "integer:0"], ["text:mine", "integer:2"],
                ["text:price", "integer:2"], ["text:live", "integer:2"],
            ])
            #expect(try rows(harness, "SELECT id, price, live, note, mine FROM t_item ORDER BY id") == [
                ["text:1", "real:12.0", "integer:1", "null", "integer:1"],
                ["text:2", "real:7.0", "integer:0", "text:mine", "integer:0"],
                ["text:3", "real:30.0", "integer:1", "null", "integer:1"],
            ])
            #expect(try rows(harness, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 't_item' ORDER BY name") == [
                ["text:my_index"], ["text:sqlite_autoindex_t_item_1"], ["text:t_item.city"], ["text:t_item.live"], ["text:t_item_walk_order"],
            ])
            #expect(try rows(harness, "SELECT table_name, name FROM _mirror_columns ORDER BY name") == [
                ["text:t_item", "text:city"], ["text:t_item", "text:live"], ["text:t_item", "text:price"],
            ])

            // The same columns again: the schema does not change at all.
            let schema = "SELECT type, name, sql FROM sqlite_master UNION ALL SELECT 'column', name, definition FROM _mirror_columns ORDER BY 1, 2"
            let before = try rows(harness, schema)
            _ = try await harness.run(changed, server: server)
            #expect(try rows(harness, schema) == before)
            #expect(try count(harness, "SELECT count(*) FROM _mirror_changes") == feedAfterUser)

            // No columns: mirror's go, the user's stay.
            _ = try await harness.run(itemsJob(), server: server)
            #expect(try rows(harness, "SELECT name FROM pragma_table_xinfo('t_item') WHERE hidden <> 0 OR name = 'note'") == [
                ["text:note"], ["text:mine"],
            ])
            #expect(try count(harness, "SELECT count(*) FROM _mirror_columns") == 0)
            #expect(try harness.ids() == ["1", "2", "3"])
            #expect(try count(harness, "SELECT count(*) FROM _mirror_changes") == feedAfterUser)
        }
    }

    @Test("a job's column named like a user's own column is refused, and nothing is changed; the same columns again change nothing")
    func usersColumnTaken() async throws {
        let harness = try Harness()
        let path = harness.folder + "/t_item.sqlite"
        let store = try TableStore(path: path)
        try await store.prepare(table: "t_item")
        try await store.pool.write { db in try db.execute(sql: "ALTER TABLE t_item ADD COLUMN City TEXT") }
        let columns = [RecordColumn(name: "price", path: JSONPath("price")!, type: .integer),
                       RecordColumn(name: "city", path: JSONPath("venue.city")!)]
        do {
            try await store.prepare(table: "t_item", columns: columns)
            Issue.record("the column of a user's own was taken")
        } catch {
            #expect("\(error)" == "table 't_item' has a column 'city' that mirror did not make: name the job's column otherwise")
        }
        let names = try await store.pool.read { db in try String.fetchAll(db, sql: "SELECT name FROM pragma_table_xinfo('t_item')") }
        #expect(names == ["account", "id", "record", "position", "first_seen", "last_seen", "City"])
        #expect(try await store.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM _mirror_columns") } == 0)

        // Columns as they are already: preparing the table again writes nothing to its schema.
        let own = [RecordColumn(name: "price", path: JSONPath("price")!, type: .integer, index: true)]
        try await store.prepare(table: "t_item", columns: own)
        let version = try await store.pool.read { db in try Int.fetchOne(db, sql: "PRAGMA schema_version") }
        try await store.prepare(table: "t_item", columns: own)
        #expect(try await store.pool.read { db in try Int.fetchOne(db, sql: "PRAGMA schema_version") } == version)
    }

    @Test("a snapshot, whole or of one account, copies a table with its generated columns and their indexes")
    func snapshotOfAccount() async throws {
        let harness = try Harness()
        let api = EditableAPI([[Self.event1, Self.event2]])
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(itemsJob(Self.fiveColumns), server: server)
        }
        let written = try await harness.snapshot("snap", account: "")
        let copy = try DatabaseQueue(path: harness.folder + "/snap/t_item.sqlite")
        #expect(written.manifest.databases.map(\.tables) == [[SnapshotManifest.Table(name: "t_item", records: 2)]])
        #expect(try await copy.read { db in try String.fetchAll(db, sql: "SELECT city FROM t_item ORDER BY id") } == ["Oslo", "Bergen"])
        try await harness.snapshot("whole")
        let whole = try DatabaseQueue(path: harness.folder + "/whole/t_item.sqlite")
        #expect(try await whole.read { db in
            try String.fetchAll(db, sql: "SELECT city FROM t_item WHERE account = '' AND city = 'Bergen'")
        } == ["Bergen"])
        #expect(try await whole.read { db in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE name LIKE 't_item.%'") }
            == ["t_item.city", "t_item.price"])
    }

    @Test("every problem of columns is reported where it is written, before any request")
    func validation() throws {
        let harness = try Harness()
        let path = harness.folder + "/jobs.yaml"
        func itemsJob(_ keys: String) -> String { MirrorCoreTests.itemsJob(keys, url: "http://127.0.0.1:1/items?page={page}") }
        func problems(_ yaml: String) -> [String] {
            do {
                _ = try harness.load(yaml)
                return []
            } catch {
                return "\(error)".components(separatedBy: "\n")
            }
        }
        #expect(problems(itemsJob("""
            columns:
              "bad name": a
              ID: a
              city: venue.city
              City: venue.town
              tags: tags.*
              quoted: '/a"b'
              empty: a..b
              kind: { path: a, type: int }
              flag: { path: a, index: yes, stored: 1, sorted: true }
              nopath: { type: text }
            """)) == [
            "\(path):10:7: column name 'bad name' must match [A-Za-z_][A-Za-z0-9_]*",
            "\(path):11:7: column name 'ID' is taken: every record table has the columns account, id, record, position, "
                + "first_seen, last_seen, parent_id (names compared without case)",
            "\(path):13:7: column 'City' is column 'city' again (first set at 12:7): SQLite compares column names without case",
            "\(path):14:13: 'columns.tags' must lead to one value: a column's path takes no '*' and no filter, not 'tags.*'",
            "\(path):15:15: 'columns.quoted' cannot be a column's path: SQLite's JSON paths cannot name the key 'a\"b', which holds '\"' or '\\'",
            "\(path):16:14: 'columns.empty' must be a dot path such as 'data.list' ('.' for the whole response) or a JSON Pointer "
                + "such as '/@odata.nextLink', not 'a..b'",
            "\(path):17:30: 'columns.kind.type' must be integer, real, text, boolean or time, not 'int'",
            "\(path):18:31: 'columns.flag.index' must be true or false, not 'yes'",
            "\(path):18:44: 'columns.flag.stored' must be true or false, not '1'",
            "\(path):18:47: unknown key 'sorted' in column 'flag' (did you mean 'stored'?)",
            "\(path):19:15: column 'nopath' needs 'path', the record path it takes",
        ])
        #expect(problems(itemsJob("columns: [a, b]")) == [
            "\(path):9:14: 'columns' must be a mapping of column name to record path, such as { city: venue.city }",
        ])
        #expect(problems("""
            version: 1
            jobs:
              - { name: a, url: "http://127.0.0.1:1/a", records: ., id: id, table: t, share_table: true, columns: { city: c } }
              - { name: b, url: "http://127.0.0.1:1/b", records: ., id: id, table: t, share_table: true, columns: { city: { path: c, type: text } } }
              - { name: c, url: "http://127.0.0.1:1/c", records: ., id: id, table: t, share_table: true, columns: { city: c } }
            """) == [
            "\(path):4:72: job 'b' stores into table 't' of t.sqlite, as job 'a' does, with other 'columns': jobs of one table declare the same columns",
        ])
        let spec = try harness.load(itemsJob(Self.fiveColumns)).jobs[0]
        #expect(spec.columns == [
            RecordColumn(name: "city", path: JSONPath("venue.city")!, index: true),
            RecordColumn(name: "price", path: JSONPath("price")!, type: .integer, index: true),
            RecordColumn(name: "rating", path: JSONPath("rating")!, type: .real),
            RecordColumn(name: "live", path: JSONPath("live")!, type: .boolean),
            RecordColumn(name: "starts", path: JSONPath("starts")!, type: .time),
        ])
    }

    @Test("the time rule in Swift (RecordColumn.isTime) agrees with the time column's SQL, string by string")
    func timeRule() throws {
        let texts = [
            "2024-01-02T03:04", "2024-01-02T03:04:05", "2024-01-02T03:04:05.1234567", "2024-01-02T03:04:05Z", "2024-01-02T03:04:05z",
            "2024-01-02T03:04:05 Z", "2024-01-02T03:04:05Z ", "2024-01-02T03:04:05+02:00", "2024-01-02T03:04:05-02:00",
            "2024-01-02T03:04:05 +02:00", "2024-01-02T03:04:05\tZ", "2024-01-02T03:04:05\n", "2024-01-02T03:04:05+14:59",
            "2024-01-02T24:59", "2024-02-30T03:04", "0000-01-01T00:00", "2024-01-02T03:04:05.5Z", "2024-01-02T03:04Z",
            "2024-01-02T03:04:05.123+01:30", "2024-01-02T03:04:05 ",
            // Not times:
            "2024-01-02T03:04:05+0200", "2024-01-02T03:04:05+15:00", "2024-01-02T03:04:05+14:60", "2024-01-02T25:00",
            "2024-01-02T03:60", "2024-01-02T03:04:60", "2024-02-32T03:04", "2024-00-02T03:04", "2024-13-02T03:04",
            "2024-01-02T03:04.", "2024-01-02T03:04:05.", "2024-01-02T03:04.5", "2024-01-02T03:04:5", "2024-01-02T03:04:05Zjunk",
            "2024-01-02T03:04:05+02", "2024-01-02T03:04:05+2:00", "2024-01-02T03:04:05+02:0", "2024-01-02T03:04:05+02:00Z",
            "2024-01-02T03:04:05.-1", "2024-01-02 03:04", "2024-01-02", "24-01-02T03:04", "2024-1-02T03:04", "now", "",
            " 2024-01-02T03:04", "2024-01-02t03:04", "2024-01-02T03:04:05ZZ", "2024-01-02T03:04:05+02:00 x",
        ]
        let column = RecordColumn(name: "t", path: JSONPath("t")!, type: .time)
        let sql = "SELECT (\(GeneratedColumns.expression(column))) IS NOT NULL FROM (SELECT json_object('t', ?) AS record)"
        let kept = try DatabaseQueue().read { db in try texts.map { try Bool.fetchOne(db, sql: sql, arguments: [$0]) ?? false } }
        #expect(kept.filter { $0 }.count == 20)
        for (text, kept) in zip(texts, kept) {
            #expect(RecordColumn.isTime(text) == kept, "\(text.debugDescription): the column \(kept ? "keeps" : "drops") it")
        }
    }
}
