import Foundation
import GRDB
@testable import MirrorModel
@testable import MirrorStore
import MirrorTestSupport
import Synchronization
import Testing

/// A cursor API whose pages carry validators and honour conditional requests. Each
/// page has a version; bumping it changes the page's content and its validators.
final class ConditionalAPI: Sendable {
    struct Page: Sendable {
        var ids: [String]
        var next: String?
        /// Sent as an ETag, or as a Last-Modified date when `useDate`.
        var version: Int
        var useDate = false
    }

    let pages: Mutex<[String: Page]>

    init(_ pages: [String: Page]) {
        self.pages = Mutex(pages)
    }

    func change(_ cursor: String, _ update: @Sendable (inout Page) -> Void) {
        pages.withLock { update(&$0[cursor]!) }
    }

    var handler: @Sendable (FixtureRequest) async -> FixtureResponse {
        { request in
            let cursor = request.parameter("cursor") ?? ""
            guard let page = self.pages.withLock({ $0[cursor] }) else { return .text("no such page", status: 404) }
            let validator: (String, String) = page.useDate
                ? ("Last-Modified", "Sun, 0\(page.version) Nov 2026 10:00:00 GMT")
                : ("ETag", "\"\(cursor)-v\(page.version)\"")
            let presented = page.useDate ? request.headers["if-modified-since"] : request.headers["if-none-match"]
            if presented == validator.1 {
                return FixtureResponse(status: 304, headers: [validator], body: [])
            }
            let records = page.ids.map { #"{"id":"\#($0)","v":\#(page.version)}"# }.joined(separator: ",")
            let next = page.next.map { #""\#($0)""# } ?? "null"
            return .json(#"{"items":[\#(records)],"next":\#(next)}"#, headers: [validator])
        }
    }
}

/// One job walking `ConditionalAPI`'s cursor pages into `t_item`.
let cursorJob = """
    version: 1
    jobs:
      - name: feed
        url: "BASE/feed?cursor={cursor}"
        next: next
        records: items
        id: id
        table: t_item
    """

private func threePageAPI() -> ConditionalAPI {
    ConditionalAPI([
        "": .init(ids: ["1", "2"], next: "B", version: 1),
        "B": .init(ids: ["3"], next: "C", version: 1),
        "C": .init(ids: ["4"], next: nil, version: 1, useDate: true),
    ])
}

extension Harness {
    /// `id → last_seen` of every stored record.
    func lastSeen() async throws -> [String: String] {
        try await database("t_item.sqlite").read { db in
            Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT id, last_seen FROM t_item").map { ($0["id"], $0["last_seen"]) })
        }
    }
}

@Suite("conditional requests and refresh_after", .timeLimit(.minutes(6)))
struct IncrementalTests {
    @Test("an incremental job rerun against an unchanged API keeps its walk's high-water mark and its database's content")
    func unchangedIncrementalRerun() async throws {
        let harness = try Harness()
        let api = PagedAPI(records: [
            [#"{"id":"1","updated_at":"2024-01-02T00:00:00Z"}"#, #"{"id":"2","updated_at":"2024-01-03T00:00:00Z"}"#],
            [#"{"id":"3","updated_at":"2024-01-01T00:00:00Z"}"#],
        ])
        let handler: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
            let page = Int(request.parameter("page") ?? "") ?? -1
            let etag = "\"p\(page)\""
            if request.headers["if-none-match"] == etag { return FixtureResponse(status: 304, headers: [("ETag", etag)], body: []) }
            return .json(api.body(page: page), headers: [("ETag", etag)])
        }
        let marks = "SELECT since, high_water, walk_high_water FROM _mirror_walks"
        let highest = #"text:"2024-01-03T00:00:00Z""#
        var digests: [String] = []
        try await FixtureServer.with(handler) { server in
            let job = itemsJob("incremental: updated_at\nconcurrency: 1", url: "BASE/items?page={page}&since={since}")
            for run in 1...3 {
                let summary = try await harness.run(job, server: server)
                #expect(summary.jobs[0].succeeded)
                #expect(try harness.typedRows(marks) == [[run == 1 ? "null" : highest, highest, highest]], "run \(run)")
                digests.append(try DatabaseContent.digest(of: harness.output + "/t_item.sqlite"))
            }
            // The second rerun: pages 1 and 2 answered 304, the empty page 3 asked again.
            #expect(server.requests.dropFirst(6).map {
                "\($0.path) \($0.parameter("page") ?? "-") \($0.parameter("since") ?? "-") \($0.headers["if-none-match"] ?? "-")"
            } == [
                #"/items 1 2024-01-03T00:00:00Z "p1""#, #"/items 2 2024-01-03T00:00:00Z "p2""#, "/items 3 2024-01-03T00:00:00Z -",
            ])
        }
        // The first rerun asks with the new {since}; the second finds everything as it was.
        #expect(digests[1] == digests[2])
        #expect(try harness.ids() == ["1", "2", "3"])
    }

    @Test("validators are sent back; a 304 replays the stored page: the walk follows its cursor, last_seen moves on")
    func notModified() async throws {
        let harness = try Harness()
        let api = threePageAPI()
        try await FixtureServer.with(api.handler) { server in
            let first = try await harness.run(cursorJob, server: server)
            #expect(first.jobs[0].records.new == 4)
            #expect(server.requests.allSatisfy { $0.headers["if-none-match"] == nil && $0.headers["if-modified-since"] == nil })
            let seen = try await harness.lastSeen()

            let second = try await harness.run(cursorJob, server: server)
            let requests = server.requests.suffix(3)
            #expect(requests.map(\.target) == ["/feed", "/feed?cursor=B", "/feed?cursor=C"])
            #expect(requests.map { $0.headers["if-none-match"] } == ["\"-v1\"", "\"B-v1\"", nil])
            #expect(requests.map { $0.headers["if-modified-since"] } == [nil, nil, "Sun, 01 Nov 2026 10:00:00 GMT"])
            let outcome = second.jobs[0]
            #expect(outcome.pages == JobOutcome.Pages(total: 3, fetched: 0, notModified: 3, skipped: 0) && outcome.bytes == 0)
            #expect(outcome.records == JobOutcome.Records(new: 0, updated: 0, unchanged: 4, rejected: 0, pruned: 0))
            #expect(outcome.stopReason == "no next page after page 3")
            #expect(second.jobs[0].pages.total == 3 && second.jobs[0].pages.notModified == 3 && second.jobs[0].pages.skipped == 0)
            #expect(second.jobs[0].records == .init(new: 0, updated: 0, unchanged: 4, rejected: 0, pruned: 0))
            let moved = try await harness.lastSeen()
            #expect(moved.keys.sorted() == ["1", "2", "3", "4"])
            #expect(moved.allSatisfy { $0.value > seen[$0.key]! })

            // One page changes: it alone is served whole, the walk goes on past it.
            api.change("B") { $0.ids = ["3", "5"]; $0.version = 2 }
            let third = try await harness.run(cursorJob, server: server)
            let outcome3 = third.jobs[0]
            #expect(outcome3.pages.notModified == 2)
            #expect((outcome3.records.new, outcome3.records.updated, outcome3.records.unchanged) == (1, 1, 3))
        }
        #expect(try harness.ids() == ["1", "2", "3", "5", "4"])
        #expect(try harness.record("3") == #"{"id":"3","v":2}"#)
        let etags = try await harness.database("t_item.sqlite").read { db in
            try String?.fetchAll(db, sql: "SELECT etag FROM _mirror_pages ORDER BY page")
        }
        #expect(etags == ["\"-v1\"", "\"B-v2\"", nil])
    }

    @Test("a 304 for a page whose records are gone fetches it whole")
    func replayMissing() async throws {
        let harness = try Harness()
        try await FixtureServer.with(threePageAPI().handler) { server in
            _ = try await harness.run(cursorJob, server: server)
            try await harness.database("t_item.sqlite").write { db in
                try db.execute(sql: "DELETE FROM t_item WHERE id = '3'")
            }
            let again = try await harness.run(cursorJob, server: server)
            let requests = Array(server.requests.suffix(4))
            // B again, whole; C was requested while B's copy was being replayed.
            #expect(requests.prefix(2).map(\.target) == ["/feed", "/feed?cursor=B"])
            #expect(requests.suffix(2).map(\.target).sorted() == ["/feed?cursor=B", "/feed?cursor=C"])
            #expect(requests.map { $0.headers["if-none-match"] } == ["\"-v1\"", "\"B-v1\"", nil, nil])
            let outcome = again.jobs[0]
            #expect(outcome.pages.total == 3 && outcome.pages.notModified == 2)
            #expect((outcome.records.new, outcome.records.unchanged) == (1, 3))
        }
        #expect(try harness.ids() == ["1", "2", "3", "4"])
    }

    @Test("stop.known still ends a walk on a replayed page")
    func knownOnReplay() async throws {
        let harness = try Harness()
        let api = threePageAPI()
        let yaml = cursorJob + "\n    stop: { known: true }\n"
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(yaml, server: server)
            api.change("") { $0.ids = ["0", "1", "2"]; $0.version = 2 }
            let again = try await harness.run(yaml, server: server)
            #expect(again.jobs[0].stopReason == StopReason.knownPage(page: 2).description)
            #expect(again.jobs[0].pages.notModified == 1)
            #expect(server.requests.count == 3 + 2)
        }
        #expect(try harness.ids() == ["0", "1", "2", "3", "4"])
    }

    @Test("refresh_after: pages fetched within it are not requested; older ones are, with validators; --refresh ignores it")
    func refreshAfter() async throws {
        let harness = try Harness()
        let yaml = """
            version: 1
            jobs:
              - name: items
                url: "BASE/items?page={page}"
                pages: { from: 1, to: 3 }
                records: data.list
                id: id
                table: t_item
                refresh_after: 1h
                concurrency: 1
            """
        let api = PagedAPI(ids: [["1", "2"], ["3"], ["4"]])
        try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            if request.headers["if-none-match"] == "\"p\(page)\"" {
                return FixtureResponse(status: 304, headers: [("ETag", "\"p\(page)\"")], body: [])
            }
            return .json(api.body(page: page), headers: [("ETag", "\"p\(page)\"")])
        }) { server in
            _ = try await harness.run(yaml, server: server)
            #expect(server.requests.count == 3)
            let seen = try await harness.lastSeen()

            let skipped = try await harness.run(yaml, server: server)
            #expect(server.requests.count == 3)
            let outcome = skipped.jobs[0]
            #expect(outcome.pages.total == 3 && outcome.pages.skipped == 3 && outcome.pages.notModified == 0)
            #expect(outcome.records.unchanged == 4 && outcome.stopReason == "pages.to reached at page 3")
            #expect(skipped.jobs[0].pages.total == 3 && skipped.jobs[0].pages.skipped == 3 && skipped.jobs[0].pages.notModified == 0)
            #expect(try await harness.lastSeen().allSatisfy { $0.value > seen[$0.key]! })

            // Page 2 was fetched long ago: it alone is asked for, conditionally.
            try await harness.database("t_item.sqlite").write { db in
                try db.execute(sql: "UPDATE _mirror_pages SET fetched_at = '2000-01-01T00:00:00.000Z' WHERE page = 2")
            }
            let aged = try await harness.run(yaml, server: server)
            #expect(server.requests.count == 4)
            #expect(server.requests.last?.target == "/items?page=2")
            #expect(server.requests.last?.headers["if-none-match"] == "\"p2\"")
            #expect(aged.jobs[0].pages.skipped == 2 && aged.jobs[0].pages.notModified == 1)
            // A 304 counts as a fetch: the page is within refresh_after again.
            _ = try await harness.run(yaml, server: server)
            #expect(server.requests.count == 4)

            let refreshed = try await harness.run(yaml, server: server, refresh: true)
            #expect(server.requests.count == 7)
            #expect(server.requests.suffix(3).allSatisfy { $0.headers["if-none-match"] == nil })
            #expect(refreshed.jobs[0].pages.fetched == 3)
        }
        #expect(try harness.ids() == ["1", "2", "3", "4"])
    }
}
