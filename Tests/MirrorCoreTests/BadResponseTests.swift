import Foundation
import GRDB
import Logging
@testable import MirrorCore
@testable import MirrorHTTP
@testable import MirrorJobFile
@testable import MirrorModel
import MirrorTestSupport
import Testing

private func job(url: String = "BASE/items?page={page}&key=${API_KEY}", extra: String = "") -> String {
    """
    version: 1
    jobs:
      - name: events
        url: "\(url)"
        records: data.list
        id: id
        table: t_item
    \(extra)
    """
}

/// Pages 1-2 are good; page 3 is whatever the test serves.
private func serve(page3: FixtureResponse) -> @Sendable (FixtureRequest) async -> FixtureResponse {
    { request in
        let page = Int(request.parameter("page") ?? "") ?? 0
        if page == 3 { return page3 }
        return .json(PagedAPI(ids: [["1", "2"], ["3"]]).body(page: page))
    }
}

@Suite("bad responses", .timeLimit(.minutes(6)))
struct BadResponseTests {
    func check(_ page3: FixtureResponse, problem: String, extra: String = "") async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with(serve(page3: page3)) { server in
            let summary = try await harness.run(job(extra: extra), server: server, environment: ["API_KEY": "hunter2"])
            let expected = "job 'events': GET \(server.base)/items?page=3&key=REDACTED: \(problem); page 3 not stored, pages 1-2 kept"
            #expect(summary.jobs[0].error == expected)
            #expect(summary.jobs.map(\.status) == [.failed])
            return summary
        }
        #expect(!summary.allSucceeded)
        #expect(try harness.ids() == ["1", "2", "3"])
        #expect(!summary.reported.contains("hunter2"))
        let stored = try await harness.database("t_item.sqlite").read { db in
            try String.fetchAll(db, sql: "SELECT url FROM _mirror_pages UNION ALL SELECT coalesce(error, '') FROM _mirror_runs")
        }
        #expect(!stored.joined().contains("hunter2"))
    }

    @Test("a response that is not JSON fails the job and keeps earlier pages")
    func notJSON() async throws {
        try await check(.text(#"{"data": {"list": [1, 2"#, status: 200, contentType: "application/json"),
                        problem: "HTTP 200: response is not JSON: unexpected end of input")
    }

    /// A valid page of about 2,000 bytes.
    private var bigPage: [UInt8] {
        Array(PagedAPI(ids: [(0..<100).map { "id-\($0)" }]).body(page: 1).utf8)
    }

    @Test("a body over max_page_size is rejected, whether its length is announced or not")
    func oversized() async throws {
        #expect(bigPage.count > 2048)
        try await check(FixtureResponse(body: bigPage), problem: "HTTP 200: body over the 2 KB cap",
                        extra: "    max_page_size: 2KB")
        try await check(FixtureResponse(body: bigPage, delivery: .chunked(256)), problem: "HTTP 200: body over the 2 KB cap",
                        extra: "    max_page_size: 2KB")
    }

    @Test("a body cut short is retried, then rejected")
    func cutShort() async throws {
        try await check(FixtureResponse(body: bigPage, delivery: .cutShort(at: 100)),
                        problem: "HTTP 200: body cut short: connection closed early (after 1 retry)", extra: "    retries: 1")
    }

    @Test("a body that stalls past the timeout is given up on as timed out, with its status, and is worth another try",
          .timeLimit(.minutes(6)))
    func stalledBody() async throws {
        let time = ManualClock()
        let arrived = Turns()
        let page = bigPage
        try await FixtureServer.with({ _ in FixtureResponse(body: page, delivery: .stall(at: 100)) }) { server in
            let url = server.base + "/items?page=3"
            let request = HTTPRequest(method: "GET", url: RedactedURL(real: url, shown: url), headers: [], body: nil,
                                      timeout: 4, maxBytes: 1 << 20)
            let sent = Task { try await HTTPClient(clock: time.clock).send(request, admit: { _ in arrived.give() }) }
            // The head and the first 100 bytes are in; then 4 s pass with nothing more.
            await arrived.wait()
            time.advance(by: .seconds(4))
            var failure: (any Error)?
            if case let .failure(error) = await sent.result { failure = error }
            let error = try #require(failure as? HTTPError)
            #expect(error.status == 200)
            #expect(error.reason == "timed out")
            #expect(error.kind == .transient)
        }
    }

    @Test("a response that does not come within the timeout is given up on and retried like a timeout",
          .timeLimit(.minutes(6)))
    func stalledResponse() async throws {
        let harness = try Harness()
        let time = ManualClock()
        let held = Turns()
        let summary = try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            // Page 3 is held until the run has ended.
            if page == 3 { await held.wait() }
            return .json(PagedAPI(ids: [["1", "2"], ["3"]]).body(page: page))
        }) { server in
            // One page at a time: no other page is in flight when the time moves.
            async let run = harness.run(job(extra: "    timeout: 4s\n    retries: 1\n    concurrency: 1"), server: server,
                                        environment: ["API_KEY": "hunter2"], clock: time.clock, retry: RetryPolicy(baseDelay: 0))
            // Each try of page 3 waits 4 s; the retry is sent at once.
            for tries in 1...2 {
                while server.requests.filter({ $0.parameter("page") == "3" }).count < tries {
                    try await Task.sleep(for: .milliseconds(5))
                }
                time.advance(by: .seconds(4))
            }
            let summary = try await run
            held.giveAll()
            let expected = "job 'events': GET \(server.base)/items?page=3&key=REDACTED: no response: timed out (after 1 retry); page 3 not stored, pages 1-2 kept"
            #expect(summary.jobs[0].error == expected)
            #expect(summary.jobs.map(\.status) == [.failed])
            #expect(server.requests.map { $0.parameter("page") ?? "" } == ["1", "2", "3", "3"])
            return summary
        }
        #expect(!summary.allSucceeded)
        #expect(try harness.ids() == ["1", "2", "3"])
        #expect(!summary.reported.contains("hunter2"))
    }

    @Test("an HTML page served with 200 is named as such")
    func html() async throws {
        try await check(.text("<html><body>maintenance</body></html>", status: 200, contentType: "text/html"),
                        problem: "HTTP 200: response is HTML, not JSON")
    }

    @Test("a records path that is not an array says what it found")
    func notArray() async throws {
        try await check(.json(#"{"data":{"list":{"id":"1"}}}"#),
                        problem: "HTTP 200: 'data.list' is not an array (found object)")
    }

    @Test("a response without the records path says so")
    func missingRecords() async throws {
        try await check(.json(#"{"error":"rate limited"}"#), problem: "HTTP 200: no 'data.list' in the response")
    }

    @Test("an HTTP error status fails the job")
    func serverError() async throws {
        try await check(.text("oops", status: 500), problem: "HTTP 500: unexpected status (internal server error): oops (after 4 retries)")
    }

    @Test("an error status names the start of what the server said, on one line, cut at 200 characters; a web page is not quoted")
    func errorBody() async throws {
        try await check(.text("{\n  \"error\": \"_size must be <= 1000\"\n}", status: 400),
                        problem: #"HTTP 400: unexpected status (bad request): { "error": "_size must be <= 1000" }"#)
        let long = String(repeating: "word ", count: 100)
        try await check(.text(long, status: 422),
                        problem: "HTTP 422: unexpected status (unprocessable entity): "
                            + String(repeating: "word ", count: 40).dropLast() + "…")
        try await check(.text("<html><body>Forbidden</body></html>", status: 403, contentType: "text/html"),
                        problem: "HTTP 403: unexpected status (forbidden)")
    }

    @Test("other jobs of the run still run after one fails")
    func otherJobsRun() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            request.path == "/bad" ? .text("nope", status: 403) : .json(#"{"data":{"list":[{"id":"9"}]}}"#)
        }) { server in
            let yaml = """
                version: 1
                defaults: { records: data.list, id: id }
                jobs:
                  - { name: bad, url: "BASE/bad", table: t_bad }
                  - { name: good, url: "BASE/good", table: t_item }
                """
            return try await harness.run(yaml, server: server)
        }
        #expect(summary.jobs.map(\.succeeded) == [false, true])
        #expect(summary.jobs[0].error?.hasSuffix("HTTP 403: unexpected status (forbidden): nope; page 1 not stored, nothing stored") == true)
        #expect(try harness.ids() == ["9"])
    }

    @Test("a connection refused names the URL and says no response")
    func connectionRefused() async throws {
        let harness = try Harness()
        // A port that was just free: nothing listens there.
        let port = try await FixtureServer.with({ _ in .json("{}") }) { $0.port }
        let file = try harness.load(job(url: "http://127.0.0.1:\(port)/x"))
        var options = Runner.Options()
        options.output = harness.output
        options.retry = RetryPolicy(baseDelay: 0.01)
        let summary = try await Runner(client: HTTPClient(), logger: Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() })).run([file], options: options)
        #expect(summary.jobs[0].error == "job 'events': GET http://127.0.0.1:\(port)/x: no response: connection refused (after 4 retries); page 1 not stored, nothing stored")
    }

    @Test("a next cursor seen twice ends the job as failed after storing the pages before")
    func cursorLoop() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            switch request.parameter("c") {
            case nil: return .json(#"{"items":[{"id":"1"}],"next":"A"}"#)
            case "A": return .json(#"{"items":[{"id":"2"}],"next":"B"}"#)
            default: return .json(#"{"items":[{"id":"3"}],"next":"A"}"#)
            }
        }) { server in
            let yaml = """
                version: 1
                jobs:
                  - { name: loop, url: "BASE/l?c={cursor}", next: next, records: items, id: id, table: t_item }
                """
            let summary = try await harness.run(yaml, server: server)
            #expect(server.requests.count == 3)
            #expect(summary.jobs[0].error == "job 'loop': GET \(server.base)/l?c=B: loop: cursor 'A' seen twice; pages 1-3 kept")
            return summary
        }
        #expect(!summary.jobs[0].succeeded)
        #expect(try harness.ids() == ["1", "2", "3"])
    }

    @Test("a next URL that leads back to the first page is a loop, caught before it is fetched again")
    func loopToStart() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            let base = request.base
            return request.parameter("p") == "2"
                ? .json(#"{"items":[{"id":"2"}],"next":"\#(base)/l?p=1"}"#)
                : .json(#"{"items":[{"id":"1"}],"next":"\#(base)/l?p=2"}"#)
        }) { server in
            let yaml = """
                version: 1
                jobs:
                  - { name: loop, url: "\(server.base)/l?p=1", next: next, records: items, id: id, table: t_item }
                """
            let summary = try await harness.run(yaml, server: server)
            #expect(server.requests.map(\.target) == ["/l?p=1", "/l?p=2"])
            #expect(summary.jobs[0].error
                == "job 'loop': GET \(server.base)/l?p=2: loop: next URL \(server.base)/l?p=1 seen twice; pages 1-2 kept")
            return summary
        }
        #expect(!summary.jobs[0].succeeded)
        #expect(try harness.ids() == ["1", "2"])
    }
}

@Suite("validate", .timeLimit(.minutes(6)))
struct ValidateTests {
    @Test("a response that breaks `validate` is rejected whole, naming path, expected and found types")
    func mismatch() async throws {
        let harness = try Harness()
        let api = PagedAPI(ids: [["1", "2"], ["3"], ["4"]])
        let summary = try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            return .json(api.body(page: page, extra: page == 3 ? #","total":"9""# : #","total":9"#))
        }) { server in
            let yaml = """
                version: 1
                jobs:
                  - name: events
                    url: "BASE/items?page={page}"
                    records: data.list
                    id: id
                    table: t_item
                    validate: { data.list: array, data.total: number }
                """
            let summary = try await harness.run(yaml, server: server)
            #expect(summary.jobs[0].error == "job 'events': GET \(server.base)/items?page=3: HTTP 200: 'data.total' must be number, found string; page 3 not stored, pages 1-2 kept")
            return summary
        }
        #expect(!summary.allSucceeded)
        #expect(try harness.ids() == ["1", "2", "3"])
    }

    @Test("a type name validate does not know is a config error")
    func missingAndConfig() throws {
        let yaml = """
            version: 1
            jobs:
              - { name: a, url: "https://x.test/", records: l, id: id, table: t, validate: { l: list } }
            """
        do {
            _ = try JobFileLoader().parse(text: yaml, path: "j.yaml", folder: ".")
            Issue.record("expected a config error")
        } catch {
            #expect(error.description == "j.yaml:3:85: 'validate' types are object, array, string, number, bool or null, not 'list'")
        }
    }
}
