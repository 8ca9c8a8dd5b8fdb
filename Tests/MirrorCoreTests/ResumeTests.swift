import Foundation
import GRDB
@testable import MirrorModel
import MirrorTestSupport
import Testing

private let yaml = """
    version: 1
    jobs:
      - name: items
        url: "BASE/items?page={page}"
        records: data.list
        id: id
        table: t_item
        retries: 0
        concurrency: 1
    """

private let api = PagedAPI(ids: [["1", "2"], ["3"], ["4", "5"], ["6"]])

/// Serves `api`, but page 3 fails while `broken` is set.
private func serve(_ broken: SharedCounter) -> @Sendable (FixtureRequest) async -> FixtureResponse {
    { request in
        let page = Int(request.parameter("page") ?? "") ?? 0
        if page == 3, broken.value == 0 { return .text("down", status: 500) }
        return .json(api.body(page: page))
    }
}

@Suite("resume", .timeLimit(.minutes(6)))
struct ResumeTests {
    @Test("a failed walk resumes at the page that failed, positions continuing")
    func resumes() async throws {
        let harness = try Harness()
        let fixed = SharedCounter()
        try await FixtureServer.with(serve(fixed)) { server in
            let first = try await harness.run(yaml, server: server)
            #expect(!first.allSucceeded)
            #expect(try harness.ids() == ["1", "2", "3"])
            fixed.increment()
            let second = try await harness.run(yaml, server: server)
            #expect(server.requests.map(\.target).suffix(3) == ["/items?page=3", "/items?page=4", "/items?page=5"])
            #expect(second.jobs[0].resumedAt == 3)
            #expect(second.jobs[0].records.new == 3)
            // A complete walk starts over next time.
            let third = try await harness.run(yaml, server: server)
            #expect(third.jobs[0].resumedAt == nil)
            #expect(server.requests.count == 11)  // 3 + 3 + 5
        }
        #expect(try harness.ids() == ["1", "2", "3", "4", "5", "6"])
        let positions = try await harness.database("t_item.sqlite").read { db in
            try Int.fetchAll(db, sql: "SELECT position FROM t_item ORDER BY position")
        }
        #expect(positions == [0, 1, 2, 3, 4, 5])
    }

    @Test("--refresh starts a failed walk over at its first page")
    func refresh() async throws {
        let harness = try Harness()
        let fixed = SharedCounter()
        try await FixtureServer.with(serve(fixed)) { server in
            _ = try await harness.run(yaml, server: server)
            fixed.increment()
            let again = try await harness.run(yaml, server: server, refresh: true)
            #expect(again.jobs[0].resumedAt == nil)
            #expect(server.requests.map(\.target).suffix(5) == (1...5).map { "/items?page=\($0)" })
        }
    }

    @Test("a cursor walk resumes at the cursor that failed")
    func cursor() async throws {
        let harness = try Harness()
        let fixed = SharedCounter()
        try await FixtureServer.with({ request in
            switch request.parameter("c") {
            case nil: return .json(#"{"items":[{"id":"a"}],"next":"B"}"#)
            case "B": return fixed.value == 0 ? .text("down", status: 503) : .json(#"{"items":[{"id":"b"}],"next":null}"#)
            default: return .json(#"{"items":[]}"#)
            }
        }) { server in
            let yaml = """
                version: 1
                jobs:
                  - { name: c, url: "BASE/c?c={cursor}", next: next, records: items, id: id, table: t_item, retries: 0 }
                """
            _ = try await harness.run(yaml, server: server)
            fixed.increment()
            let second = try await harness.run(yaml, server: server)
            #expect(second.allSucceeded)
            #expect(server.requests.map(\.target) == ["/c", "/c?c=B", "/c?c=B"])
        }
        #expect(try harness.ids() == ["a", "b"])
    }

    @Test("a next URL that echoes a secret is stored as ${NAME}: the walk resumes there, and a 304 replays it")
    func secretInNextURL() async throws {
        let harness = try Harness()
        let fixed = SharedCounter()
        try await FixtureServer.with({ request in
            guard request.parameter("key") == "k3y" else { return .text("bad key", status: 401) }
            switch request.parameter("p") {
            case "1":
                if request.headers["if-none-match"] == "\"one\"" { return FixtureResponse(status: 304, body: []) }
                return .json(#"{"items":[{"id":"a"}],"next":"\#(request.base)/n?p=2&key=k3y"}"#, headers: [("ETag", "\"one\"")])
            default:
                return fixed.value == 0 ? .text("down", status: 503) : .json(#"{"items":[{"id":"b"}],"next":null}"#)
            }
        }) { server in
            let yaml = """
                version: 1
                jobs:
                  - { name: n, url: "BASE/n?p=1&key=${KEY}", next: next, records: items, id: id, table: t_item, retries: 0 }
                """
            let first = try await harness.run(yaml, server: server, environment: ["KEY": "k3y"])
            #expect(!first.allSucceeded)
            let stored = try await harness.database("t_item.sqlite").read { db in
                try String.fetchAll(db, sql: "SELECT next_url FROM _mirror_walks UNION ALL SELECT next_url FROM _mirror_pages")
            }
            #expect(stored == ["\(server.base)/n?p=2&key=${KEY}", "\(server.base)/n?p=2&key=${KEY}"])
            fixed.increment()
            let second = try await harness.run(yaml, server: server, environment: ["KEY": "k3y"])
            #expect(second.allSucceeded)
            #expect(second.jobs[0].resumedAt == 2)
            // A complete walk starts over: page 1 answers 304 and its stored next URL is followed.
            let third = try await harness.run(yaml, server: server, environment: ["KEY": "k3y"])
            #expect(third.allSucceeded)
            #expect(third.jobs[0].pages.notModified == 1)
            #expect(server.requests.map(\.target) == [
                "/n?p=1&key=k3y", "/n?p=2&key=k3y", "/n?p=2&key=k3y", "/n?p=1&key=k3y", "/n?p=2&key=k3y",
            ])
        }
        #expect(try harness.ids() == ["a", "b"])
    }
}
