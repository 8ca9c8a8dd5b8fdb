import Foundation
@testable import MirrorHTTP
@testable import MirrorModel
import MirrorTestSupport
import Testing

private let yaml = """
    version: 1
    jobs:
      - name: items
        url: "BASE/items?page={page}"
        pages: { from: 1, to: 2 }
        records: data.list
        id: id
        table: t_item
        retries: 2
        concurrency: 1
    """

@Suite("retries", .timeLimit(.minutes(6)))
struct RetryTests {
    /// Page 1 answers `failures` times with `status` (and `headers`), then with records.
    func serve(status: Int, failures: Int, headers: [(String, String)] = []) -> @Sendable (FixtureRequest) async -> FixtureResponse {
        let seen = SharedCounter()
        return { request in
            if request.parameter("page") == "1", seen.value < failures {
                seen.increment()
                return FixtureResponse(status: status, headers: headers, body: Array("busy".utf8))
            }
            return .json(PagedAPI(ids: [["1"], ["2"]]).body(page: Int(request.parameter("page") ?? "") ?? 0))
        }
    }

    @Test("a 503 is retried and the walk goes on", arguments: [503, 500, 408, 429])
    func retried(status: Int) async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with(serve(status: status, failures: 2)) { server in
            let summary = try await harness.run(yaml, server: server)
            #expect(server.requests.map(\.target) == ["/items?page=1", "/items?page=1", "/items?page=1", "/items?page=2"])
            return summary
        }
        #expect(summary.jobs[0].succeeded)
        #expect(summary.jobs[0].retries == 2)
        #expect(try harness.ids() == ["1", "2"])
    }

    @Test("retries run out: the job fails and says how many were made")
    func exhausted() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with(serve(status: 502, failures: 9)) { server in
            let summary = try await harness.run(yaml, server: server)
            #expect(server.requests.count == 3)
            #expect(summary.jobs[0].error == "job 'items': GET \(server.base)/items?page=1: HTTP 502: unexpected status (bad gateway): busy (after 2 retries); page 1 not stored, nothing stored")
            return summary
        }
        #expect(summary.jobs[0].retries == 2)
    }

    @Test("other 4xx fail at once", arguments: [400, 401, 403, 404])
    func notRetried(status: Int) async throws {
        let harness = try Harness()
        try await FixtureServer.with(serve(status: status, failures: 1)) { server in
            let summary = try await harness.run(yaml, server: server)
            #expect(server.requests.count == 1)
            #expect(!summary.jobs[0].succeeded)
            #expect(summary.jobs[0].retries == 0)
        }
    }

    @Test("Retry-After is honoured in seconds and as an HTTP date, however long (max_wait decides what is waited)")
    func retryAfter() throws {
        let policy = RetryPolicy(baseDelay: 0.5, maxDelay: 30)
        let now = Date(timeIntervalSince1970: 1_445_412_480) // Wed, 21 Oct 2015 07:28:00 GMT
        #expect(policy.delay(attempt: 1, retryAfter: "7", now: now) == 7)
        #expect(policy.delay(attempt: 1, retryAfter: "Wed, 21 Oct 2015 07:28:30 GMT", now: now) == 30)
        #expect(policy.delay(attempt: 1, retryAfter: "86400", now: now) == 86400)
        #expect(policy.delay(attempt: 1, retryAfter: "Wed, 21 Oct 2015 07:27:00 GMT", now: now) == 0)
        for attempt in 1...8 {
            let backoff = min(30, 0.5 * pow(2, Double(attempt - 1)))
            let delay = policy.delay(attempt: attempt, retryAfter: "soon", now: now)
            #expect(delay >= backoff / 2 && delay <= backoff)
        }
    }

    @Test("Retry-After from a 429 sets the wait")
    func retryAfterHeader() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with(serve(status: 429, failures: 1, headers: [("Retry-After", "0")])) { server in
            try await harness.run(yaml, server: server)
        }
        #expect(summary.jobs[0].succeeded && summary.jobs[0].retries == 1)
    }

    @Test("once a job has failed, no page of it is tried again: the retries of pages in flight are called off",
          .timeLimit(.minutes(6)))
    func noRetryAfterFailure() async throws {
        let harness = try Harness()
        let asked = InFlightGauge()
        // The clock stands still: the retries the 503s ask for, 30 seconds on, never come due.
        let time = ManualClock()
        let summary = try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            switch page {
            case 1:
                return .json(PagedAPI(ids: [["1"]]).body(page: 1))
            case 2:
                // Fails the job once page 3 (asked with it: page 1 was full) has had its first answer, a 503.
                await asked.waitForEntered(1)
                return .text("gone", status: 404)
            default:
                asked.enter()
                return FixtureResponse(status: 503, headers: [("Retry-After", "30")], body: Array("busy".utf8))
            }
        }) { server in
            let summary = try await harness.run("""
                version: 1
                jobs:
                  - { name: items, url: "BASE/items?page={page}", pages: { from: 1, to: 5 }, records: data.list, id: id,
                      table: t_item, retries: 3, concurrency: 5 }
                """, server: server, clock: time.clock)
            #expect(server.requests.map(\.target).sorted() == (1...3).map { "/items?page=\($0)" })
            return summary
        }
        #expect(summary.jobs[0].error?.hasSuffix("/items?page=2: HTTP 404: unexpected status (not found): gone; page 2 not stored, page 1 kept") == true)
        #expect(summary.jobs[0].retries == 0)
    }
}
