import Foundation
import GRDB
@testable import MirrorModel
import MirrorTestSupport
import Testing

@Suite("records as SQLite reads them", .timeLimit(.minutes(6)))
struct RecordRulesTests {
    @Test("a record with duplicate keys is stored under its first id, the one SQLite's json_extract reads")
    func duplicateKeys() async throws {
        let harness = try Harness()
        try await FixtureServer.with({ _ in .json(#"{"data":{"list":[{"id":"1","id":"2","v":1}]}}"#) }) { server in
            _ = try await harness.run(itemsJob("pages: { from: 1, to: 1 }"), server: server)
        }
        let row = try harness.database("t_item.sqlite").read { db in
            try Row.fetchOne(db, sql: "SELECT id, json_extract(record, '$.id') AS extracted FROM t_item")
        }
        #expect(row?["id"] == "1")
        #expect(row?["extracted"] == "1")
    }

    @Test("a record that is not an object is rejected saying what it is")
    func notObjects() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ _ in .json(#"{"data":{"list":[7,"x",null,[1],{"id":"1"},{"n":2}]}}"#) }) { server in
            try await harness.run(itemsJob("pages: { from: 1, to: 1 }"), server: server)
        }
        #expect(summary.jobs[0].rejected.map(\.reason) == [
            "record 0 is a number, not an object", "record 1 is a string, not an object", "record 2 is null, not an object",
            "record 3 is an array, not an object", "record 5 has no usable id at 'id' (found nothing)",
        ])
        #expect(try harness.ids() == ["1"])
    }

    @Test("a next URL of 100,000 characters is cut in the message that quotes it")
    func longURL() async throws {
        let harness = try Harness()
        let tail = String(repeating: "x", count: 100_000)
        let (summary, base) = try await FixtureServer.with({ request in
            .json(#"{"data":{"list":[{"id":"\#(request.target.count)"}]},"next":"\#(request.base)/items?p=\#(tail)"}"#)
        }) { server in
            (try await harness.run(itemsJob("next: next\nconcurrency: 1", url: "BASE/items"), server: server), server.base)
        }
        let url = base + "/items?p=" + tail
        let cut = String(url.prefix(500)) + "… (\(url.utf8.count - 500) more bytes)"
        let error = try #require(summary.jobs[0].error)
        // Only its first 500 bytes are quoted (the server refuses so long a request).
        let quoted = error.hasPrefix("job 'items': GET \(cut): ")
        #expect(quoted)
        #expect(error.utf8.count < 1_200)
    }
}
