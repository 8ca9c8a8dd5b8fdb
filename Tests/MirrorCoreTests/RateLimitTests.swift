import Foundation
@testable import MirrorHTTP
@testable import MirrorModel
import MirrorTestSupport
import Synchronization
import Testing

@Suite("rate limit", .timeLimit(.minutes(6)))
struct RateLimitTests {
    /// A clock that stands still at `start`; every wait the limiter asks for is recorded
    /// (as an offset from `start`) and returns at once.
    final class StillClock: Sendable {
        let start = ContinuousClock.now
        let waits = Mutex<[Duration]>([])

        var limiter: RateLimiter {
            RateLimiter(now: { [start] in start }, sleep: { [self] until in waits.withLock { $0.append(until - start) } })
        }
    }

    @Test("rate_limit spaces the requests to a host, shared by every job of the run")
    func sharedByJobs() async throws {
        let harness = try Harness()
        let clock = StillClock()
        try await FixtureServer.with({ request in
            .json(PagedAPI(ids: [["\(request.path)1"], ["\(request.path)2"], ["\(request.path)3"]])
                .body(page: Int(request.parameter("page") ?? "") ?? 0))
        }) { server in
            let yaml = """
                version: 1
                defaults: { records: data.list, id: id, rate_limit: 20/s, pages: { from: 1, to: 3 } }
                jobs:
                  - { name: a, url: "BASE/a?page={page}", table: t_a }
                  - { name: b, url: "BASE/b?page={page}", table: t_b }
                """
            let summary = try await harness.run(yaml, server: server, limiter: clock.limiter)
            #expect(summary.allSucceeded)
            #expect(server.requests.count == 6)
        }
        // 20/s: one schedule for the host, 50 ms apart, whichever job asks; the first
        // request goes at once.
        #expect(clock.waits.withLock { $0 }.sorted() == [50, 100, 150, 200, 250].map { Duration.milliseconds($0) })
    }

    @Test("slots at one host are one interval apart; other hosts are not held back")
    func slots() async throws {
        let clock = StillClock()
        let limiter = clock.limiter
        let limit = try #require(RateLimit("20/s"))
        var slots: [Duration] = []
        for _ in 0..<4 { slots.append(try await limiter.acquire(host: "a:80", limit: limit) - clock.start) }
        #expect(slots == [0, 50, 100, 150].map { Duration.milliseconds($0) })
        #expect(clock.waits.withLock { $0 } == [50, 100, 150].map { Duration.milliseconds($0) })
        // Another host gets the current instant as its slot: no wait.
        #expect(try await limiter.acquire(host: "b:80", limit: limit) == clock.start)
        #expect(clock.waits.withLock { $0 }.count == 3)
    }

    @Test("rate_limit reads requests per second, minute or hour")
    func parse() {
        #expect(RateLimit("5/s")?.interval == 0.2)
        #expect(RateLimit("120/m")?.interval == 0.5)
        #expect(RateLimit("3600/h")?.interval == 1)
        #expect(RateLimit("5") == nil && RateLimit("0/s") == nil && RateLimit("5/d") == nil && RateLimit("x/s") == nil)
    }
}
