import Foundation
import GRDB
@testable import MirrorModel
@testable import MirrorStore
import MirrorTestSupport
import Testing

@Suite("ids byte for byte, as the store keeps them", .timeLimit(.minutes(6)))
struct ExactIDTests {
    @Test("ids that differ after a NUL are three records, not one")
    func nul() async throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/t_item.sqlite"
        let store = try TableStore(path: path)
        try await store.prepare(table: "t_item")
        _ = try await store.startWalk(job: "items", account: "", table: "t_item", at: "2026-11-29T00:00:00Z", fresh: true)
        var builder = PageRecords.Builder(capacity: 0, count: 3)
        for (id, json) in [("a\0b", #"{"id":"a\u0000b"}"#), ("a\0c", #"{"id":"a\u0000c"}"#), ("a", #"{"id":"a"}"#)] {
            Array(id.utf8).withUnsafeBufferPointer { id in builder.append(id: id) { $0.append(contentsOf: json.utf8) } }
        }
        let counts = try await store.commit(PageCommit(
            job: "items", account: "", table: "t_item",
            url: RedactedURL(real: "http://127.0.0.1:1/items?page=1", redactor: Redactor(secrets: [])), requestBody: "",
            page: 1, status: 200, responseBytes: 0, records: builder.records, elements: 3, onChange: .replace,
            firstPosition: 0, nextPage: 2, time: "2026-11-29T00:00:00Z"))
        #expect(counts.new == 3)
        let database = try DatabaseQueue(path: path)
        // The stored ids in walk order, as hex of their bytes (GRDB reads text up to a NUL).
        #expect(try await database.read { db in try String.fetchAll(db, sql: "SELECT hex(id) FROM t_item ORDER BY position") }
            == ["610062", "610063", "61"])
        // Each record is stored against its own id.
        let pairs = try await database.read { db in
            try Row.fetchAll(db, sql: "SELECT hex(id) AS id, record FROM t_item ORDER BY position").map {
                "\($0["id"] as String) \($0["record"] as String)"
            }
        }
        #expect(pairs == [#"610062 {"id":"a\u0000b"}"#, #"610063 {"id":"a\u0000c"}"#, #"61 {"id":"a"}"#])
        // The page's ids, kept for replay, keep the NUL too.
        let ids = try await database.read { db in try String.fetchOne(db, sql: "SELECT ids FROM _mirror_pages") }
        #expect(ids == #"["a\u0000b","a\u0000c","a"]"#)
    }
}
