import Foundation
@testable import MirrorHTTP
@testable import MirrorModel
import MirrorTestSupport
import Synchronization
import Testing

/// Pages of `{"id":N,"v":V}` records the test rewrites between runs.
private final class ItemsAPI: Sendable {
    let items = Mutex<[(id: Int, version: Int)]>([(1, 1), (2, 1), (3, 1)])

    var handler: @Sendable (FixtureRequest) async -> FixtureResponse {
        { request in
            let items = request.parameter("page") == "1" ? self.items.withLock { $0 } : []
            return .json(#"{"data":[\#(items.map { #"{"id":\#($0.id),"v":\#($0.version)}"# }.joined(separator: ","))]}"#)
        }
    }
}

/// One job walking `{"data":[…]}` pages into `t_item` of `out/`, pruning what it no longer sees.
let itemsYAML = """
    version: 1
    output: out
    jobs:
      - name: items
        url: "BASE/items?page={page}"
        records: data
        id: id
        table: t_item
        prune: true
    """

@Suite("snapshot and the change feed, from the binary", .timeLimit(.minutes(6)))
struct ShippingTests {
    @Test("snapshot prints what it wrote; export --changes-since prints the feed and its mark; a compacted mark exits 4")
    func snapshotAndFeed() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let api = ItemsAPI()
        try await FixtureServer.with(api.handler) { server in
            try itemsYAML.replacingOccurrences(of: "BASE", with: server.base)
                .write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            #expect(try await mirror(["run", "jobs.yaml", "--quiet"], in: folder).status == 0)
            let snapshot = try await mirror(["snapshot", "snap", "--output", "out"], in: folder)
            #expect(snapshot.status == 0 && snapshot.stderr == "")
            let bytes = try FileManager.default.attributesOfItem(atPath: folder + "/snap/t_item.sqlite")[.size] as! Int
            #expect(snapshot.stdout.replacing(#/[0-9.]+s\n$/#, with: "TIMEs\n")
                == "t_item.sqlite: t_item 3 records, \(bytes) bytes, changes through 3\nsnapshot snap: 1 database, TIMEs\n")
            api.items.withLock { $0 = [(1, 2), (3, 1), (4, 1)] }
            #expect(try await mirror(["run", "jobs.yaml", "--quiet"], in: folder).status == 0)
        }
        let manifest = try String(contentsOfFile: folder + "/snap/manifest.json", encoding: .utf8)
        let feedID = String(manifest.firstMatch(of: #/"feed" : "([0-9a-f]{16})"/#)!.1)
        let feed = try await mirror(["export", "--table", "t_item", "--output", "out", "--changes-since", "3", "--feed", feedID],
                                    in: folder)
        #expect(feed.status == 0)
        #expect(feed.stdout == """
            {"seq":4,"op":"upsert","account":"","id":"4","record":{"id":4,"v":1}}
            {"seq":5,"op":"upsert","account":"","id":"1","record":{"id":1,"v":2}}
            {"seq":6,"op":"delete","account":"","id":"2"}

            """)
        #expect(feed.stderr == "changes_through 6 (3 changes since 3, feed \(feedID))\n")
        let json = try await mirror(["export", "--table", "t_item", "--output", "out", "--changes-since", "5", "--format", "json"],
                                    in: folder)
        #expect(json.status == 0 && json.stderr == "")
        #expect(json.stdout == "{\"changes\":[\n{\"seq\":6,\"op\":\"delete\",\"account\":\"\",\"id\":\"2\"}\n],\n"
            + "\"feed\":\"\(feedID)\",\"changes_through\":6}\n")

        let compacted = try await mirror(["snapshot", "snap", "--output", "out", "--compact-changes-before", "5"], in: folder)
        #expect(compacted.status == 0)
        let behind = try await mirror(["export", "--table", "t_item", "--output", "out", "--changes-since", "3"], in: folder)
        #expect(behind.status == 4 && behind.stdout == "")
        #expect(behind.stderr == "error: the change feed of 't_item' was compacted through seq 4: the changes since 3 are "
            + "gone; take a new snapshot\n")
        let ahead = try await mirror(["export", "--table", "t_item", "--output", "out", "--changes-since", "4"], in: folder)
        #expect(ahead.status == 0 && ahead.stdout.split(separator: "\n").count == 2)

        let usage = try await mirror(["export", "--table", "t_item", "--output", "out", "--changes-since", "3", "--format", "csv"],
                                     in: folder)
        #expect(usage.status == 2 && usage.stderr.contains("--changes-since prints ndjson or json, not csv"))
        let order = try await mirror(["export", "--table", "t_item", "--output", "out", "--changes-since", "3", "--order", "id"],
                                     in: folder)
        #expect(order.status == 2 && order.stderr.contains("--order cannot be used with --changes-since"))
        let tooFar = try await mirror(["snapshot", "snap", "--output", "out", "--compact-changes-before", "8"], in: folder)
        #expect(tooFar.status == 1)
        #expect(tooFar.stderr == "error: --compact-changes-before 8 is past the last change this snapshot holds (6): a device "
            + "given it could not catch up; at most 7\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasPrefix("snap") }.sorted()
            == ["snap", "snap.lock"])
        let otherFeed = try await mirror(["export", "--table", "t_item", "--output", "out", "--changes-since", "5",
                                          "--feed", "0123456789abcdef"], in: folder)
        #expect(otherFeed.status == 4 && otherFeed.stdout == "")
        #expect(otherFeed.stderr == "error: the change feed of 't_item' is feed \(feedID), not the one that mark came from: "
            + "the database was made again since; take a new snapshot\n")
    }

    @Test("serve answers the API's URLs from the output folder, stops on SIGTERM with 0, and exits 2 when its port is taken")
    func serve() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with(ItemsAPI().handler) { server in
            try itemsYAML.replacingOccurrences(of: "BASE", with: server.base)
                .write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            #expect(try await mirror(["run", "jobs.yaml", "--quiet"], in: folder).status == 0)
        }
        let served = try await Served.start(in: folder, name: "serve")
        let listening = served.port
        // The API's own URL, answered from the mirror: the page as it was served.
        let page = try await HTTPClient().send(HTTPRequest(
            method: "GET", url: RedactedURL(real: "http://127.0.0.1:\(listening)/items?page=1", redactor: .none),
            headers: [], body: nil, timeout: answerTimeout, maxBytes: 1 << 20))
        #expect(page.status == 200 && page.headers["etag"] != nil)
        #expect(String(decoding: page.body, as: UTF8.self) == #"{"data":[{"id":1,"v":1},{"id":2,"v":1},{"id":3,"v":1}]}"#)
        let taken = try await mirror(["serve", "jobs.yaml", "--port", listening], in: folder)
        #expect(taken.status == 2)
        #expect(taken.stderr.hasSuffix("error: cannot listen on 127.0.0.1:\(listening): the port is taken: another program "
            + "listens on it (--port another one, or 0 for any free one)\n"))
        #expect(await served.stop() == .exited(0))
    }
}
