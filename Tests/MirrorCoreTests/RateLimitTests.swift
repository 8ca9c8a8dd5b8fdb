import Foundation
@testable import MirrorCore
import MirrorTestSupport
import Synchronization
import Testing

@Suite("rate limit")
struct RateLimitTests {
    final class Arrivals: Sendable {
        let times = Mutex<[ContinuousClock.Instant]>([])
    }

    @Test("rate_limit spaces the requests to a host, shared by every job of the run")
    func sharedByJobs() async throws {
        let harness = try Harness()
        let arrivals = Arrivals()
        var start = ContinuousClock.now
        try await FixtureServer.with({ request in
            arrivals.times.withLock { $0.append(.now) }
            return .json(PagedAPI(ids: [["\(request.path)1"], ["\(request.path)2"], ["\(request.path)3"]])
                .body(page: Int(request.parameter("page") ?? "") ?? 0))
        }) { server in
            let yaml = """
                version: 1
                defaults: { records: data.list, id: id, rate_limit: 20/s, pages: { from: 1, to: 3 } }
                jobs:
                  - { name: a, url: "BASE/a?page={page}", table: t_a }
                  - { name: b, url: "BASE/b?page={page}", table: t_b }
                """
            start = .now
            let summary = try await harness.run(yaml, server: server)
            #expect(summary.allSucceeded)
            #expect(server.requests.count == 6)
        }
        let times = arrivals.times.withLock { $0 }.sorted()
        // 20/s: the sixth request's slot is five 50 ms intervals after the first, which
        // cannot come before the run started. (Arrivals can only be later than slots.)
        #expect(times.count == 6)
        #expect(times[5] - start >= .milliseconds(250))
    }

    @Test("slots at one host are at least one interval apart; other hosts are not held back")
    func slots() async throws {
        let limiter = RateLimiter()
        let limit = try #require(RateLimit("20/s"))
        var slots: [ContinuousClock.Instant] = []
        for _ in 0..<4 { slots.append(try await limiter.acquire(host: "a:80", limit: limit)) }
        #expect(zip(slots.dropFirst(), slots).allSatisfy { $0 - $1 >= .milliseconds(50) })
        // Another host gets the current instant as its slot: no wait.
        let before = ContinuousClock.now
        let other = try await limiter.acquire(host: "b:80", limit: limit)
        #expect(other >= before && other <= ContinuousClock.now)
    }

    @Test("rate_limit reads requests per second, minute or hour")
    func parse() {
        #expect(RateLimit("5/s")?.interval == 0.2)
        #expect(RateLimit("120/m")?.interval == 0.5)
        #expect(RateLimit("3600/h")?.interval == 1)
        #expect(RateLimit("5") == nil && RateLimit("0/s") == nil && RateLimit("5/d") == nil && RateLimit("x/s") == nil)
    }
}
