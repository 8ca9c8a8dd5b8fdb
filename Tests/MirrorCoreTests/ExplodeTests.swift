import Foundation
import GRDB
@testable import MirrorJobFile
@testable import MirrorJSON
@testable import MirrorModel
@testable import MirrorStore
@testable import MirrorExport
import MirrorTestSupport
import Testing

/// `explode:`: lists inside each record as rows of views, run against a fixture API into
/// real SQLite files.
@Suite("exploded lists", .timeLimit(.minutes(6)))
struct ExplodeTests {
    private func rows(_ harness: Harness, _ sql: String, _ arguments: StatementArguments = []) throws -> [[String]] {
        try harness.typedRows(sql, arguments)
    }

    private func count(_ harness: Harness, _ sql: String) throws -> Int {
        try harness.database("t_item.sqlite").read { db in try Int.fetchOne(db, sql: sql) ?? -1 }
    }

    private static let order1 = #"{"id":"1","tags":["a","b"],"order":{"lines":[{"sku":"x1","qty":2,"price":1.5,"at":"2024-05-01T18:00:00Z","gift":true},{"sku":"x2","qty":12345678901234567890,"price":3}]}}"#
    private static let order2 = #"{"id":"2","tags":[],"order":{"lines":[{"sku":"y","qty":"7"}]}}"#
    private static let order3 = #"{"id":"3","title":"no lists"}"#
    private static let order4 = #"{"id":"4","tags":{"a":1},"order":{"lines":"none"}}"#
    private static let order5 = #"{"id":"5","tags":["a",7,null,{"k":"v"},[1,2],18446744073709551616,true,2.5]}"#

    private static let threeLists = """
        explode:
          tags: tags
          lines:
            path: order.lines
            columns:
              sku: { path: sku, type: text }
              qty: { path: qty, type: integer }
              price: { path: price, type: real }
              at: { path: at, type: time }
              gift: { path: gift, type: boolean }
              raw: qty
          tag_text: { path: tags, columns: { tag: { path: ., type: text } } }
        """

    private static let tagRows = "SELECT account, parent_id, idx, element FROM t_item__tags ORDER BY parent_id, idx"

    @Test("each element of a record's list is a row of its view: parent_id, idx, element and the element's typed columns; a record without the list, or with an object or a string there, has none")
    func rowsAfterWalk() async throws {
        let harness = try Harness()
        let api = EditableAPI([[Self.order1, Self.order2, Self.order3], [Self.order4, Self.order5]])
        try await FixtureServer.with(api.handler) { server in
            let summary = try await harness.run(itemsJob(Self.threeLists), server: server)
            #expect(summary.jobs[0].error == nil)
        }
        #expect(try rows(harness, Self.tagRows) == [
            ["text:", "text:1", "integer:0", "text:a"],
            ["text:", "text:1", "integer:1", "text:b"],
            ["text:", "text:5", "integer:0", "text:a"],
            ["text:", "text:5", "integer:1", "integer:7"],
            ["text:", "text:5", "integer:2", "null"],
            ["text:", "text:5", "integer:3", #"text:{"k":"v"}"#],
            ["text:", "text:5", "integer:4", "text:[1,2]"],
            ["text:", "text:5", "integer:5", "text:18446744073709551616"],
            ["text:", "text:5", "integer:6", "integer:1"],
            ["text:", "text:5", "integer:7", "real:2.5"],
        ])
        #expect(try rows(harness, "SELECT parent_id, idx, element, sku, qty, price, at, gift, raw FROM t_item__lines ORDER BY parent_id, idx") == [
            ["text:1", "integer:0", #"text:{"sku":"x1","qty":2,"price":1.5,"at":"2024-05-01T18:00:00Z","gift":true}"#,
             "text:x1", "integer:2", "real:1.5", "text:2024-05-01T18:00:00Z", "integer:1", "integer:2"],
            ["text:1", "integer:1", #"text:{"sku":"x2","qty":12345678901234567890,"price":3}"#,
             "text:x2", "text:12345678901234567890", "real:3.0", "null", "null", "text:12345678901234567890"],
            ["text:2", "integer:0", #"text:{"sku":"y","qty":"7"}"#, "text:y", "null", "null", "null", "null", "text:7"],
        ])
        #expect(try rows(harness, "SELECT parent_id, idx, tag FROM t_item__tag_text ORDER BY parent_id, idx") == [
            ["text:1", "integer:0", "text:a"], ["text:1", "integer:1", "text:b"],
            ["text:5", "integer:0", "text:a"], ["text:5", "integer:1", "null"], ["text:5", "integer:2", "null"],
            ["text:5", "integer:3", "null"], ["text:5", "integer:4", "null"], ["text:5", "integer:5", "null"],
            ["text:5", "integer:6", "null"], ["text:5", "integer:7", "null"],
        ])
        // A device's queries: by element, and every element of one record.
        #expect(try rows(harness, "SELECT parent_id FROM t_item__tags WHERE element = 'a' ORDER BY parent_id") == [["text:1"], ["text:5"]])
        #expect(try rows(harness, "SELECT idx, sku FROM t_item__lines WHERE account = '' AND parent_id = ? ORDER BY idx", ["1"])
            == [["integer:0", "text:x1"], ["integer:1", "text:x2"]])
        #expect(try rows(harness, "SELECT name FROM pragma_table_info('t_item__lines')") == [
            ["text:account"], ["text:parent_id"], ["text:idx"], ["text:element"], ["text:sku"], ["text:qty"], ["text:price"],
            ["text:at"], ["text:gift"], ["text:raw"],
        ])
        #expect(try rows(harness, "SELECT table_name, name FROM _mirror_views ORDER BY name") == [
            ["text:t_item", "text:t_item__lines"], ["text:t_item", "text:t_item__tag_text"], ["text:t_item", "text:t_item__tags"],
        ])
        // No row of its own: the records and their feed are all there is.
        #expect(try count(harness, "SELECT count(*) FROM _mirror_changes") == 5)
        #expect(try rows(harness, "SELECT sql FROM sqlite_master WHERE name = 't_item__tags'") == [[
            "text:CREATE VIEW \"t_item__tags\" AS SELECT r.account AS account, r.id AS parent_id, e.key AS idx, "
                + "CASE e.type WHEN 'integer' THEN CASE WHEN typeof(e.value) = 'integer' THEN e.value ELSE "
                + "substr(json_extract(r.record, e.fullkey, e.fullkey), 2, instr(json_extract(r.record, e.fullkey, e.fullkey), ',') - 2) "
                + "END ELSE e.value END AS element "
                + "FROM \"t_item\" AS r, json_each(r.record, '$.tags') AS e WHERE typeof(e.key) = 'integer'",
        ]])
    }

    @Test("a record's rows follow it at once: changed by a new version, gone when it is deleted or pruned")
    func followsRecords() async throws {
        let harness = try Harness()
        let api = EditableAPI([[Self.order1, Self.order2, Self.order3], [Self.order5]])
        let job = itemsJob("prune: true\ndeleted: gone\n" + Self.threeLists)
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(job, server: server)
            #expect(try count(harness, "SELECT count(*) FROM t_item__tags") == 10)

            api.set([[#"{"id":"1","tags":["c"],"order":{"lines":[]}}"#, #"{"id":"2","gone":true}"#, Self.order3,
                      #"{"id":"6","tags":["a","z"]}"#]])
            let second = try await harness.run(job, server: server)
            #expect(second.jobs[0].records == .init(new: 1, updated: 1, unchanged: 1, rejected: 0, pruned: 1, deleted: 1))
        }
        #expect(try harness.ids() == ["1", "3", "6"])
        #expect(try rows(harness, Self.tagRows) == [
            ["text:", "text:1", "integer:0", "text:c"],
            ["text:", "text:6", "integer:0", "text:a"],
            ["text:", "text:6", "integer:1", "text:z"],
        ])
        #expect(try rows(harness, "SELECT parent_id, idx, sku FROM t_item__lines") == [])
        #expect(try rows(harness, "SELECT parent_id FROM t_item__tags WHERE element = 'a'") == [["text:6"]])
    }

    @Test("changing explode between runs replaces, adds and drops views: every record and the feed stay, and a user's own view too")
    func migration() async throws {
        let harness = try Harness()
        let api = EditableAPI([[Self.order1, Self.order2], [Self.order5]])
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(itemsJob(Self.threeLists), server: server)
            try await harness.database("t_item.sqlite").write { db in
                try db.execute(sql: "CREATE VIEW my_tags AS SELECT parent_id, element FROM t_item__tags WHERE idx = 0")
            }
            let feed = try count(harness, "SELECT count(*) FROM _mirror_changes")
            #expect(feed == 3)

            // `tags` read from another path, `lines` without its columns, `tag_text` gone, `skus` new.
            let changed = itemsJob("""
                explode:
                  tags: order.lines
                  lines: order.lines
                  skus: { path: order.lines, columns: { sku: sku } }
                """)
            let second = try await harness.run(changed, server: server)
            #expect(second.jobs[0].error == nil)
            #expect(second.jobs[0].records.unchanged == 3)
            #expect(try harness.ids() == ["1", "2", "5"])
            #expect(try count(harness, "SELECT count(*) FROM _mirror_changes") == feed)
            #expect(try rows(harness, "SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name") == [
                ["text:my_tags"], ["text:t_item__lines"], ["text:t_item__skus"], ["text:t_item__tags"],
            ])
            #expect(try rows(harness, "SELECT parent_id, idx, json_extract(element, '$.sku') FROM t_item__tags ORDER BY parent_id, idx") == [
                ["text:1", "integer:0", "text:x1"], ["text:1", "integer:1", "text:x2"], ["text:2", "integer:0", "text:y"],
            ])
            #expect(try rows(harness, "SELECT name FROM pragma_table_info('t_item__lines')") == [
                ["text:account"], ["text:parent_id"], ["text:idx"], ["text:element"],
            ])
            #expect(try rows(harness, "SELECT parent_id, sku FROM t_item__skus ORDER BY parent_id, idx") == [
                ["text:1", "text:x1"], ["text:1", "text:x2"], ["text:2", "text:y"],
            ])
            // The user's view reads the replaced one.
            #expect(try rows(harness, "SELECT parent_id FROM my_tags ORDER BY parent_id") == [["text:1"], ["text:2"]])

            // The same lists again: the schema does not change at all.
            let schema = "SELECT type, name, sql FROM sqlite_master UNION ALL SELECT 'view', name, definition FROM _mirror_views ORDER BY 1, 2"
            let before = try rows(harness, schema)
            _ = try await harness.run(changed, server: server)
            #expect(try rows(harness, schema) == before)

            // No explode: mirror's views go, the user's stays.
            _ = try await harness.run(itemsJob(), server: server)
            #expect(try rows(harness, "SELECT name FROM sqlite_master WHERE type = 'view'") == [["text:my_tags"]])
            #expect(try count(harness, "SELECT count(*) FROM _mirror_views") == 0)
            #expect(try harness.ids() == ["1", "2", "5"])
            #expect(try count(harness, "SELECT count(*) FROM _mirror_changes") == feed)
        }
    }

    @Test("a list whose view would have the name of a user's own view or table is refused, and nothing is changed")
    func usersViewTaken() async throws {
        let harness = try Harness()
        let store = try TableStore(path: harness.folder + "/t_item.sqlite")
        try await store.prepare(table: "t_item")
        try await store.pool.write { db in try db.execute(sql: "CREATE VIEW T_ITEM__Tags AS SELECT 1 AS one") }
        let lists = [ExplodedList(name: "lines", path: JSONPath("order.lines")!), ExplodedList(name: "tags", path: JSONPath("tags")!)]
        do {
            try await store.prepare(table: "t_item", explode: lists)
            Issue.record("the view of a user's own was taken")
        } catch {
            #expect("\(error)" == "the view 't_item__tags' of list 'tags' of table 't_item' has the name of a view that mirror did not make: "
                + "name the job's list otherwise")
        }
        #expect(try await store.pool.read { db in
            try String.fetchAll(db, sql: "SELECT name || ' ' || sql FROM sqlite_master WHERE type = 'view'")
        } == ["T_ITEM__Tags CREATE VIEW T_ITEM__Tags AS SELECT 1 AS one"])
        #expect(try await store.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM _mirror_views") } == 0)

        // Lists as they are already: preparing the table again writes nothing to its schema.
        try await store.prepare(table: "t_item", explode: [lists[0]])
        let version = try await store.pool.read { db in try Int.fetchOne(db, sql: "PRAGMA schema_version") }
        try await store.prepare(table: "t_item", explode: [lists[0]])
        #expect(try await store.pool.read { db in try Int.fetchOne(db, sql: "PRAGMA schema_version") } == version)
    }

    @Test("a snapshot, whole or of one account, holds the table's views, and they answer the same rows")
    func snapshot() async throws {
        let harness = try Harness()
        let api = EditableAPI([[Self.order1, Self.order2], [Self.order3, Self.order5]])
        let jobs = """
            version: 1
            jobs:
              - { name: acme, url: "BASE/items?page={page}&a", records: data.list, id: id, table: t_item, account: acme,
                  explode: { tags: tags, lines: { path: order.lines, columns: { sku: { path: sku, type: text } } } } }
              - { name: zeta, url: "BASE/items?page={page}&z", records: data.list, id: id, table: t_item, account: zeta,
                  explode: { tags: tags, lines: { path: order.lines, columns: { sku: { path: sku, type: text } } } } }
            """
        try await FixtureServer.with(api.handler) { server in
            let summary = try await harness.run(jobs, server: server)
            #expect(summary.jobs.map(\.error) == [nil, nil])
        }
        let tags = "SELECT account, parent_id, idx, element FROM t_item__tags ORDER BY account, parent_id, idx"
        let lines = "SELECT account, parent_id, idx, sku FROM t_item__lines ORDER BY account, parent_id, idx"
        let source = try rows(harness, tags)
        #expect(source.count == 20)
        let sourceLines = try rows(harness, lines)
        #expect(sourceLines == ["acme", "zeta"].flatMap { account in
            [["text:\(account)", "text:1", "integer:0", "text:x1"], ["text:\(account)", "text:1", "integer:1", "text:x2"],
             ["text:\(account)", "text:2", "integer:0", "text:y"]]
        })

        try await harness.snapshot("whole")
        let written = try await harness.snapshot("acme", account: "acme")
        #expect(written.manifest.databases.map(\.tables) == [[SnapshotManifest.Table(name: "t_item", records: 4)]])
        func copied(_ name: String, _ sql: String) throws -> [[String]] {
            try harness.typedRows(sql, database: "../\(name)/t_item.sqlite")
        }
        #expect(try copied("whole", tags) == source)
        #expect(try copied("whole", lines) == sourceLines)
        #expect(try copied("acme", tags) == source.filter { $0[0] == "text:acme" })
        #expect(try copied("acme", lines) == sourceLines.filter { $0[0] == "text:acme" })
        #expect(try copied("acme", "SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name")
            == [["text:t_item__lines"], ["text:t_item__tags"]])
        // Only the table's views: no bookkeeping of mirror's.
        #expect(try copied("acme", "SELECT count(*) FROM sqlite_master WHERE name LIKE '\\_mirror\\_views' ESCAPE '\\'") == [["integer:0"]])
    }

    @Test("every problem of explode is reported where it is written, before any request")
    func validation() throws {
        let harness = try Harness()
        let path = harness.folder + "/jobs.yaml"
        func itemsJob(_ keys: String) -> String { MirrorCoreTests.itemsJob(keys, url: "http://127.0.0.1:1/items?page={page}") }
        func problems(_ yaml: String, environment: [String: String] = [:]) -> [String] {
            do {
                _ = try harness.load(yaml, environment: environment)
                return []
            } catch {
                return "\(error)".components(separatedBy: "\n")
            }
        }
        #expect(problems(itemsJob("""
            explode:
              "bad name": tags
              tags: tags
              Tags: labels
              all: .
              stars: tags.*
              picked: "links[rel=next]"
              quoted: '/a"b'
              empty: a..b
              nopath: { columns: { sku: sku } }
              lines:
                path: order.lines
                columns:
                  idx: i
                  Element: e
                  sku: sku
                  SKU: sku2
                  kind: { path: k, type: int }
                  hot: { path: h, index: true }
                  many: items.*
                  nothing: { type: text }
                  extra: { path: x, stored: true }
              odd: { path: o, rows: 3 }
            """)) == [
            "\(path):10:7: list name 'bad name' must match [A-Za-z_][A-Za-z0-9_]*",
            "\(path):12:7: list 'Tags' is list 'tags' again (first set at 11:7): its view would have the other's name, "
                + "and SQLite compares names without case",
            "\(path):13:12: 'explode.all' cannot be '.': the record itself is an object, never a list",
            "\(path):14:14: 'explode.stars' must lead to one list: a list's path takes no '*' and no filter, not 'tags.*'",
            "\(path):15:15: 'explode.picked' must lead to one list: a list's path takes no '*' and no filter, not 'links[rel=next]'",
            "\(path):16:15: 'explode.quoted' cannot be a list's path: SQLite's JSON paths cannot name the key 'a\"b', which holds '\"' or '\\'",
            "\(path):17:14: 'explode.empty' must be a dot path such as 'data.list' ('.' for the whole response) or a JSON Pointer "
                + "such as '/@odata.nextLink', not 'a..b'",
            "\(path):18:15: list 'nopath' needs 'path', the record path of the list",
            "\(path):22:11: column name 'idx' is taken: the view of every list has the columns account, parent_id, idx, element "
                + "(names compared without case)",
            "\(path):23:11: column name 'Element' is taken: the view of every list has the columns account, parent_id, idx, element "
                + "(names compared without case)",
            "\(path):25:11: column 'SKU' of list 'lines' is column 'sku' again (first set at 24:11): SQLite compares column names without case",
            "\(path):26:34: 'explode.lines.columns.kind.type' must be integer, real, text, boolean or time, not 'int'",
            "\(path):27:34: 'explode.lines.columns.hot.index' cannot be true: list 'lines' is a view, computed from the records as "
                + "it is read, and SQLite indexes no view; index a column of the table instead",
            "\(path):28:17: 'explode.lines.columns.many' must lead to one value: a column's path takes no '*' and no filter, not 'items.*'",
            "\(path):29:20: column 'nothing' of list 'lines' needs 'path', the element path it takes ('.' for the element itself)",
            "\(path):30:37: 'explode.lines.columns.extra.stored' cannot be true: list 'lines' is a view, computed from the records "
                + "as it is read, and SQLite stores no column of a view",
            "\(path):31:23: unknown key 'rows' in list 'odd'",
        ])
        #expect(problems(itemsJob("explode: [tags]")) == [
            "\(path):9:14: 'explode' must be a mapping of list name to record path, such as { tags: tags }",
        ])
        #expect(problems(itemsJob("explode: { lines: { path: lines, columns: [sku] } }")) == [
            "\(path):9:47: 'explode.lines.columns' must be a mapping of column name to element path, such as { sku: product.sku }",
        ])
        // What drop and hash take out of every record is no list to read.
        #expect(problems(itemsJob("""
            explode:
              tags: tags
              lines: { path: order.lines, columns: { sku: sku, email: buyer.email, whole: . } }
            drop: [tags, order.lines.*.sku]
            hash: { salt: "${MIRROR_SALT}", paths: [order.lines.*.buyer] }
            """), environment: ["MIRROR_SALT": "0123456789abcdef0123"]) == [
            "\(path):12:12: 'drop' path 'tags' leaves list 'tags' ('tags') nothing to read: drop the list, or keep the field",
            "\(path):12:18: 'drop' path 'order.lines.*.sku' leaves column 'sku' of list 'lines' ('sku' in each element of "
                + "'order.lines') nothing to read: drop the column, or keep the field",
            "\(path):13:45: 'hash.paths' path 'order.lines.*.buyer' leaves column 'email' of list 'lines' ('buyer.email' in each "
                + "element of 'order.lines') nothing to read: a column may hold a hashed value, not a field inside one",
        ])
        #expect(problems(itemsJob("""
            explode: { lines: { path: order.lines, columns: { email: buyer.email } } }
            hash: { salt: "${MIRROR_SALT}", paths: [order, order.lines.*.buyer.email] }
            """), environment: ["MIRROR_SALT": "0123456789abcdef0123"]) == [
            "\(path):10:45: 'hash.paths' path 'order' leaves list 'lines' ('order.lines') nothing to read: "
                + "a hash is a string, never a list; hash the elements' fields instead",
        ])
        // A view is named like no job's table of the folder, nor like another table's view or index.
        #expect(problems("""
            version: 1
            jobs:
              - { name: a, url: "http://127.0.0.1:1/a", records: ., id: id, table: t, explode: { tags: tags, x_walk_order: x } }
              - { name: b, url: "http://127.0.0.1:1/b", records: ., id: id, table: t__tags }
              - { name: c, url: "http://127.0.0.1:1/c", records: ., id: id, table: u, database: u.sqlite, explode: { list: l } }
              - { name: d, url: "http://127.0.0.1:1/d", records: ., id: id, table: u__list, database: other.sqlite }
              - { name: e, url: "http://127.0.0.1:1/e", records: ., id: id, table: p, database: u.sqlite, explode: { q__r: l } }
              - { name: f, url: "http://127.0.0.1:1/f", records: ., id: id, table: p__q, database: u.sqlite, explode: { r: l } }
              - { name: g, url: "http://127.0.0.1:1/g", records: ., id: id, table: w, database: u.sqlite, explode: { x: l } }
              - { name: h, url: "http://127.0.0.1:1/h", records: ., id: id, table: w__x }
              - { name: i, url: "http://127.0.0.1:1/i", records: ., id: id, table: _mirror, explode: { tags: tags } }
              - { name: j, url: "http://127.0.0.1:1/j", records: ., id: id, table: t, share_table: true, explode: { tags: tags } }
              - { name: k, url: "http://127.0.0.1:1/k", records: ., id: id, table: t__x, database: t.sqlite }
            """) == [
            "\(path):4:72: table 't__tags' has the name of the view of list 'tags' of job 'a' ('t__tags' in t.sqlite): name one of them otherwise",
            "\(path):6:72: table 'u__list' has the name of the view of list 'list' of job 'c' ('u__list' in u.sqlite): name one of them otherwise",
            "\(path):8:109: the view of list 'r' would be named 'p__q__r' in u.sqlite, the name of the view of list 'q__r' "
                + "of job 'e''s table 'p': name one of them otherwise",
            "\(path):10:72: table 'w__x' has the name of the view of list 'x' of job 'g' ('w__x' in u.sqlite): name one of them otherwise",
            "\(path):11:92: list 'tags' would make the view '_mirror__tags', and names starting with '_mirror_' are kept for mirror's own: "
                + "name the table otherwise",
            "\(path):12:72: job 'j' stores into table 't' of t.sqlite, as job 'a' does, with other 'explode': jobs of one table declare the same lists",
            "\(path):13:72: the index 't__x_walk_order' of table 't__x' in t.sqlite would have the name of the view of list "
                + "'x_walk_order' of job 'a': name one of them otherwise",
        ])
        let spec = try harness.load(itemsJob(Self.threeLists)).jobs[0]
        #expect(spec.explode == [
            ExplodedList(name: "tags", path: JSONPath("tags")!),
            ExplodedList(name: "lines", path: JSONPath("order.lines")!, columns: [
                RecordColumn(name: "sku", path: JSONPath("sku")!, type: .text),
                RecordColumn(name: "qty", path: JSONPath("qty")!, type: .integer),
                RecordColumn(name: "price", path: JSONPath("price")!, type: .real),
                RecordColumn(name: "at", path: JSONPath("at")!, type: .time),
                RecordColumn(name: "gift", path: JSONPath("gift")!, type: .boolean),
                RecordColumn(name: "raw", path: JSONPath("qty")!),
            ]),
            ExplodedList(name: "tag_text", path: JSONPath("tags")!, columns: [RecordColumn(name: "tag", path: JSONPath(".")!, type: .text)]),
        ])
    }
}
