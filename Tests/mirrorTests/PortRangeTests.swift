import Foundation
import MirrorTestSupport
import Testing

/// A URL whose port is past 65535 is no URL mirror can send: said as such, never a crash.
@Suite("URLs with a port out of range", .timeLimit(.minutes(6)))
struct PortRangeTests {
    @Test("a next link and a file on port 99999: the page fails, the file fails, what was stored stays, the run ends")
    func portOutOfRange() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with({ request in
            switch request.parameter("page") {
            case "1": .json(#"{"data":[{"id":1,"file":"http://127.0.0.1:99999/a.png"}],"next":"http://127.0.0.1:99999/items?page=2"}"#)
            default: .json(#"{"data":[]}"#)
            }
        }) { server in
            try """
                version: 1
                output: out
                jobs:
                  - name: items
                    url: "\(server.base)/items?page={page}"
                    next: next
                    records: data
                    id: id
                    table: t_item
                    downloads: [file]
                    retries: 0
                """.write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            let run = try await mirror(["run", "jobs.yaml"], in: folder)
            #expect(run.status == 1, "\(run.stderr)")
            #expect(run.stdout.hasPrefix("items: FAILED: job 'items': GET http://127.0.0.1:99999/items?page=2: no response: "
                + "not a valid http(s) URL; page 2 not stored, page 1 kept"), "\(run.stdout)")
            #expect(run.stdout.contains("\n  file failed: http://127.0.0.1:99999/a.png: not an absolute http(s) URL: refused\n"),
                    "\(run.stdout)")
            #expect(try await sqlite(folder + "/out/t_item.sqlite", "SELECT id FROM t_item") == "1\n")
        }
    }
}
