import Foundation
import GRDB
import MirrorDevice
import MirrorJSON
import MirrorModel
@testable import MirrorReplica
import MirrorTestSupport
import Testing

/// An app's own type for the records.
private struct Event: Decodable, Equatable {
    let id: Int
    let city: String
    let price: Double
    let startsAt: String
}

/// Two pages of events, walked in this order, in a table with three generated columns (one indexed).
private func events() async throws -> SnapshotSource {
    let rows: [(Int, String, Double, String)] = [
        (30, "Lyon", 12.5, "2026-12-03"), (10, "Paris", 40, "2026-12-01"), (20, "Lyon", 8, "2026-12-02"),
        (50, "Oslo", 19.99, "2026-12-05"), (40, "Paris", 25, "2026-12-04"), (9007199254740993, "Oslo", 5, "2026-12-06"),
    ]
    let records = rows.map { id, city, price, starts in
        (String(id), #"{"id":\#(id),"city":"\#(city)","price":\#(price),"startsAt":"\#(starts)"}"#)
    }
    return try await SnapshotSource.make([
        StoredPage(url: "https://api.example.com/events?page=1", records: Array(records[..<3]),
                   envelope: #"{"data":[],"next":"https://api.example.com/events?page=2"}"#),
        StoredPage(url: "https://api.example.com/events?page=2", records: Array(records[3...]), envelope: #"{"data":[]}"#),
    ], columns: [
        RecordColumn(name: "city", path: JSONPath("city")!, type: .text, index: true),
        RecordColumn(name: "price", path: JSONPath("price")!, type: .real),
        RecordColumn(name: "starts_at", path: JSONPath("startsAt")!, type: .text),
    ])
}

@Suite("a replica's records for app code", .timeLimit(.minutes(6)))
struct RecordsTests {
    @Test("records in walk order, as the table holds them and decoded into the app's types; big ids digit for digit")
    func walkOrder() async throws {
        let source = try await events()
        defer { try? FileManager.default.removeItem(atPath: source.root) }
        let folder = replicaFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let replica = try Replica(folder: folder)
        #expect(try replica.records(RecordQuery(table: "t_item")) == [])
        #expect(try replica.columns(of: "t_item") == nil)
        try await replica.sync(from: URL(fileURLWithPath: source.folder))

        let json = try replica.records(RecordQuery(table: "t_item")).map { String(decoding: $0, as: UTF8.self) }
        #expect(json.count == 6)
        #expect(json.first == #"{"id":30,"city":"Lyon","price":12.5,"startsAt":"2026-12-03"}"#)
        #expect(json.last == #"{"id":9007199254740993,"city":"Oslo","price":5.0,"startsAt":"2026-12-06"}"#)
        let decoded = try replica.records(RecordQuery(table: "t_item"), as: Event.self)
        #expect(decoded.map(\.id) == [30, 10, 20, 50, 40, 9007199254740993])
        #expect(decoded[1] == Event(id: 10, city: "Paris", price: 40, startsAt: "2026-12-01"))
        #expect(try replica.records(RecordQuery(table: "t_item").limit(2, offset: 3), as: Event.self).map(\.id) == [50, 40])
        #expect(try replica.columns(of: "t_item") == [
            RecordColumnInfo(name: "city", type: "TEXT", indexed: true),
            RecordColumnInfo(name: "price", type: nil, indexed: false),
            RecordColumnInfo(name: "starts_at", type: "TEXT", indexed: false),
        ])
    }

    @Test("filters and sorting by generated columns; an indexed column is read through its index; unknown names and bad decodes are said")
    func byColumns() async throws {
        let source = try await events()
        defer { try? FileManager.default.removeItem(atPath: source.root) }
        let folder = replicaFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let replica = try Replica(folder: folder)
        let outcome = try await replica.sync(from: URL(fileURLWithPath: source.folder))

        func ids(_ query: RecordQuery) throws -> [Int] { try replica.records(query, as: Event.self).map(\.id) }
        let items = RecordQuery(table: "t_item")
        #expect(try ids(items.filter("city", .equal, "Lyon")) == [30, 20])
        #expect(try ids(items.filter("city", .notEqual, "Lyon").sorted(by: "price")) == [9007199254740993, 50, 40, 10])
        #expect(try ids(items.filter("price", .greaterOrEqual, 19.99).sorted(by: "starts_at", descending: true)) == [50, 40, 10])
        #expect(try ids(items.filter("price", .less, 10)) == [20, 9007199254740993])
        #expect(try ids(items.filter("starts_at", .greater, "2026-12-02").filter("city", .equal, "Paris")) == [40])
        #expect(try ids(items.account("someone else")) == [])

        // The statement a filter on `city` makes is answered from the column's index.
        let path = folder.path + "/generations/\(outcome.generation)/t_item.sqlite"
        let (sql, arguments) = try items.filter("city", .equal, "Oslo").statement(columns: ["city", "price", "starts_at"], child: false)
        let plan = try await DatabaseQueue(path: path, configuration: { var c = Configuration(); c.readonly = true; return c }()).read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map { $0["detail"] as String }
        }
        #expect(plan.contains { $0.contains("USING INDEX") && $0.contains("city") }, "\(plan)")

        #expect(throws: ReplicaError.query("no generated column 'town' in 't_item': its columns: city, price, starts_at")) {
            try replica.records(items.filter("town", .equal, "Lyon"))
        }
        #expect(throws: ReplicaError.query("no table 't_nothing' in '\(folder.path)/generations/\(outcome.generation)'; its tables: t_item")) {
            try replica.records(RecordQuery(table: "t_nothing"))
        }
        struct Wrong: Decodable { let id: String }
        #expect(throws: ReplicaError.self) { try replica.records(items, as: Wrong.self) }
        do {
            _ = try replica.records(items, as: Wrong.self)
        } catch let ReplicaError.query(message) {
            #expect(message.hasPrefix("record 1 of 't_item' does not decode as Wrong: "), "\(message)")
        }
    }
}
