import Foundation
import GRDB
@testable import MirrorJSON
@testable import MirrorModel
@testable import MirrorStore
import MirrorTestSupport
import Testing

/// Commits `pages` (each a list of id and record JSON) into `t_item` of the database at
/// `path`, prepared with `columns`, as a run commits them.
private func stored(_ path: String, columns: [RecordColumn], pages: [[(id: String, json: String)]]) async throws {
    let store = try TableStore(path: path)
    try await store.prepare(table: "t_item", columns: columns)
    _ = try await store.startWalk(job: "items", account: "", table: "t_item", at: "2026-11-29T00:00:00Z", fresh: true)
    var position = 0
    for (index, page) in pages.enumerated() {
        var builder = PageRecords.Builder(capacity: 0, count: page.count)
        for record in page {
            Array(record.id.utf8).withUnsafeBufferPointer { id in builder.append(id: id) { $0.append(contentsOf: record.json.utf8) } }
        }
        _ = try await store.commit(PageCommit(
            job: "items", account: "", table: "t_item",
            url: RedactedURL(real: "http://127.0.0.1:1/items?page=\(index + 1)", redactor: Redactor(secrets: [])),
            requestBody: "", page: index + 1, status: 200, responseBytes: 0, records: builder.records, elements: page.count,
            onChange: .replace, firstPosition: position, nextPage: index + 2, time: "2026-11-29T00:00:00Z"))
        position += page.count
    }
    // A first walk's columns and their indexes, made once it has stored its pages, as a run makes them.
    try await store.completeColumns(table: "t_item", columns: columns)
    try await store.indexColumns(table: "t_item", columns: columns)
    try await store.checkpoint()
}

/// Generated columns whose SQL changed since a database was made, on tables the store
/// prepares and commits to.
@Suite("changed generated columns", .timeLimit(.minutes(6)))
struct StoredColumnsTests {
    private static let event1 = #"{"id":"1","venue":{"city":"Oslo"},"price":12,"live":true,"starts":"2024-05-01T18:00:00Z"}"#
    private static let event2 = #"{"id":"2","venue":{"city":"Bergen"},"price":7.5,"live":false,"starts":"2024-05-02T09:30:15.250+02:00"}"#
    private static let event3 = #"{"id":"3","venue":{"city":"Oslo"},"price":30,"live":true,"starts":"now"}"#

    /// Definitions of `city` (text), `price` (integer) and `starts` (time) as an earlier
    /// release wrote them into a table and `_mirror_columns`.
    private static let earlierDefinitions = [
        ("city", #""city" TEXT GENERATED ALWAYS AS (CASE WHEN json_type(record, '$.venue.city') = 'text' THEN json_extract(record, '$.venue.city') END) VIRTUAL"#),
        ("price", #""price" GENERATED ALWAYS AS (CASE WHEN json_type(record, '$.price') IN ('integer', 'real') THEN CASE WHEN typeof(json_extract(record, '$.price')) = 'integer' THEN json_extract(record, '$.price') WHEN substr(json_extract(record, '$.price', '$.price'), 2, instr(json_extract(record, '$.price', '$.price'), ',') - 2) NOT GLOB '*[.eE]*' THEN substr(json_extract(record, '$.price', '$.price'), 2, instr(json_extract(record, '$.price', '$.price'), ',') - 2) END END) VIRTUAL"#),
        ("starts", #""starts" TEXT GENERATED ALWAYS AS (CASE WHEN json_type(record, '$.starts') = 'text' AND json_extract(record, '$.starts') GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]*' THEN CASE WHEN julianday(json_extract(record, '$.starts')) IS NOT NULL THEN json_extract(record, '$.starts') END END) VIRTUAL"#),
    ]

    @Test("a database whose columns an earlier release made gets each column whose SQL changed made again, with its index, and reads the same values; the records and the change feed stay")
    func upgrade() async throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/t_item.sqlite"
        let columns = [
            RecordColumn(name: "city", path: JSONPath("venue.city")!, type: .text, index: true),
            RecordColumn(name: "price", path: JSONPath("price")!, type: .integer, index: true),
            RecordColumn(name: "starts", path: JSONPath("starts")!, type: .time),
        ]
        try await stored(path, columns: columns, pages: [[("1", Self.event1), ("2", Self.event2)], [("3", Self.event3)]])
        let database = try DatabaseQueue(path: path)
        func rows(_ sql: String) throws -> [[String]] { try typedRows(database, sql) }
        // The table as the earlier release left it: its columns' SQL and definitions.
        try await database.write { db in
            try db.execute(sql: #"DROP INDEX "t_item.city"; DROP INDEX "t_item.price""#)
            for (name, definition) in Self.earlierDefinitions {
                try db.execute(sql: "ALTER TABLE t_item DROP COLUMN \(name)")
                try db.execute(sql: "ALTER TABLE t_item ADD COLUMN \(definition)")
                try db.execute(sql: "UPDATE _mirror_columns SET definition = ? WHERE name = ?", arguments: [definition, name])
            }
            try db.execute(sql: #"CREATE INDEX "t_item.city" ON "t_item" ("city", account); CREATE INDEX "t_item.price" ON "t_item" ("price", account)"#)
        }
        let values = try rows("SELECT id, city, price, starts FROM t_item ORDER BY id")
        #expect(values == [
            ["text:1", "text:Oslo", "integer:12", "text:2024-05-01T18:00:00Z"],
            ["text:2", "text:Bergen", "null", "text:2024-05-02T09:30:15.250+02:00"],
            ["text:3", "text:Oslo", "integer:30", "null"],
        ])
        let records = try rows("SELECT rowid, account, id, record, position, first_seen FROM t_item ORDER BY id")
        let feed = try rows("SELECT * FROM _mirror_changes ORDER BY seq")

        // The table prepared as a run prepares it before its walk, and completed after it.
        let store = try TableStore(path: path)
        try await store.prepare(table: "t_item", columns: columns)
        try await store.completeColumns(table: "t_item", columns: columns)
        try await store.indexColumns(table: "t_item", columns: columns)
        let wanted = columns.map { ["text:" + $0.name, "text:" + GeneratedColumns.definition($0)] }.sorted { $0[0] < $1[0] }
        #expect(try rows("SELECT name, definition FROM _mirror_columns ORDER BY name") == wanted)
        for (name, definition) in Self.earlierDefinitions {
            #expect(!wanted.contains(["text:" + name, "text:" + definition]), "the SQL of \(name) is as it was")
        }
        #expect(try rows("SELECT id, city, price, starts FROM t_item ORDER BY id") == values)
        #expect(try rows("SELECT rowid, account, id, record, position, first_seen FROM t_item ORDER BY id") == records)
        #expect(try rows("SELECT * FROM _mirror_changes ORDER BY seq") == feed)
        #expect(try rows("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND name LIKE 't\\_item.%' ESCAPE '\\' ORDER BY name") == [
            ["text:t_item.city", #"text:CREATE INDEX "t_item.city" ON "t_item" ("city", account)"#],
            ["text:t_item.price", #"text:CREATE INDEX "t_item.price" ON "t_item" ("price", account)"#],
        ])
        #expect(try rows("SELECT id FROM t_item INDEXED BY \"t_item.price\" WHERE price = 30") == [["text:3"]])
    }
}
