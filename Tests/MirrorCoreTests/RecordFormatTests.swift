import Foundation
@testable import MirrorModel
import MirrorTestSupport
import Testing

/// A job of `format` at `/items?page={page}`, its records' ids at `id`, in `t_item`.
private func formatJob(_ keys: String, url: String = "BASE/items?page={page}") -> String {
    itemsJob(keys, url: url).replacingOccurrences(of: "    records: data.list\n", with: "")
}

private let stored = "SELECT id, record FROM t_item ORDER BY position"

@Suite("formats that are not JSON", .timeLimit(.minutes(3)))
struct RecordFormatTests {
    @Test("ndjson paged by {page}: each line is a record (CRLF, blank lines, no final newline), an empty page ends the walk")
    func ndjsonPages() async throws {
        let harness = try Harness()
        let pages = [
            1: "{\"id\":\"a1\",\"n\":1}\r\n{\"id\":\"a2\",\"tags\":[\"x\"]}\r\n",
            2: "\n{\"id\":3, \"big\":12345678901234567890123}\n  \n{\"id\":\"a4\"}",
            3: "",
        ]
        let summary = try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            return FixtureResponse(headers: [("Content-Type", "application/x-ndjson")], body: Array((pages[page] ?? "").utf8))
        }) { server in
            let summary = try await harness.run(formatJob("format: ndjson\nconcurrency: 1"), server: server)
            #expect(server.requests.map(\.target) == ["/items?page=1", "/items?page=2", "/items?page=3"])
            return summary
        }
        #expect(summary.jobs[0].error == nil)
        #expect(summary.jobs[0].pages.total == 3)
        #expect(try harness.typedRows(stored) == [
            ["text:a1", #"text:{"id":"a1","n":1}"#],
            ["text:a2", #"text:{"id":"a2","tags":["x"]}"#],
            ["text:3", #"text:{"id":3,"big":12345678901234567890123}"#],
            ["text:a4", #"text:{"id":"a4"}"#],
        ])
        try await serving(harness) { base in
            let page = try await get(base + "/items?page=2")
            #expect(page.status == 200 && page.headers["content-type"] == "application/json")
            #expect(page.text == #"[{"id":3,"big":12345678901234567890123},{"id":"a4"}]"#)
        }
    }

    @Test("ndjson: a line that is not JSON fails its page, naming the line; earlier pages stay")
    func ndjsonBadLine() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            let body = request.parameter("page") == "1" ? "{\"id\":\"1\"}\n{\"id\":\"2\"}\n" : "{\"id\":\"3\"}\r\n\r\n{\"id\":\"4\",}\r\n"
            return FixtureResponse(body: Array(body.utf8))
        }) { server in
            let summary = try await harness.run(formatJob("format: jsonl\nconcurrency: 1"), server: server)
            #expect(summary.jobs[0].error == "job 'items': GET \(server.base)/items?page=2: HTTP 200: "
                + "line 3 is not JSON: unexpected character '}' at byte 10; page 2 not stored, page 1 kept")
            return summary
        }
        #expect(summary.jobs.map(\.status) == [.failed])
        #expect(try harness.ids() == ["1", "2"])
        #expect(try harness.typedRows("SELECT page FROM _mirror_pages") == [["integer:1"]])
    }
}
