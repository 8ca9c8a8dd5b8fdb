import Foundation
import GRDB
@testable import MirrorCore
@testable import MirrorHTTP
@testable import MirrorJobFile
@testable import MirrorModel
import MirrorTestSupport
import Synchronization
import Testing

/// An API that allows `budget` requests per `window` seconds of the test's clock, says so in
/// one header dialect, and answers 429 to a request past the budget (counted as an overrun).
final class QuotaAPI: Sendable {
    enum Dialect: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` in seconds.
        case ietf
        /// `RateLimit: "default";r=…;t=…` and `RateLimit-Policy: "default";q=…;w=…`.
        case ietfStructured
        /// `X-RateLimit-*`, the reset in seconds.
        case xSeconds
        /// `X-RateLimit-*`, the reset as a Unix time (GitHub).
        case xEpoch

        var testDescription: String { rawValue }
    }

    private struct State {
        var windowEnds: RunClock.Instant?
        var used = 0
        var windows = 0
        var overruns = 0
    }

    let budget: Int
    let window: Int
    let dialect: Dialect
    let time: ManualClock
    private let state = Mutex(State())

    init(budget: Int, window: Int, dialect: Dialect, time: ManualClock) {
        self.budget = budget
        self.window = window
        self.dialect = dialect
        self.time = time
    }

    /// Windows begun so far.
    var windows: Int { state.withLock { $0.windows } }
    /// Requests answered 429 because they overran the budget.
    var overruns: Int { state.withLock { $0.overruns } }

    /// Counts a request and answers it with `body`, or 429 when the window's budget is spent.
    func answer(_ body: String) -> FixtureResponse {
        let now = time.now
        let (remaining, left) = state.withLock { state -> (Int, Double) in
            if state.windowEnds.map({ now >= $0 }) ?? true {
                state.windowEnds = now + .seconds(window)
                state.used = 0
                state.windows += 1
            }
            state.used += 1
            if state.used > budget { state.overruns += 1 }
            return (budget - state.used, (state.windowEnds! - now).seconds)
        }
        let reset = Int(left.rounded(.up))
        var headers: [(String, String)]
        switch dialect {
        case .ietf:
            headers = [("RateLimit-Limit", "\(budget)"), ("RateLimit-Remaining", "\(max(0, remaining))"),
                       ("RateLimit-Reset", "\(reset)")]
        case .ietfStructured:
            headers = [("RateLimit-Policy", "\"default\";q=\(budget);w=\(window)"),
                       ("RateLimit", "\"default\";r=\(max(0, remaining));t=\(reset)")]
        case .xSeconds:
            headers = [("X-RateLimit-Limit", "\(budget)"), ("X-RateLimit-Remaining", "\(max(0, remaining))"),
                       ("X-RateLimit-Reset", "\(reset)")]
        case .xEpoch:
            let epoch = Int((time.date.timeIntervalSince1970 + left).rounded(.up))
            headers = [("X-RateLimit-Limit", "\(budget)"), ("X-RateLimit-Remaining", "\(max(0, remaining))"),
                       ("X-RateLimit-Reset", "\(epoch)"), ("X-RateLimit-Resource", "core")]
        }
        if remaining < 0 {
            return FixtureResponse(status: 429, headers: headers, body: Array("over the quota".utf8))
        }
        return .json(body, headers: headers)
    }
}

@Suite("quota pacing", .timeLimit(.minutes(6)))
struct QuotaTests {
    @Test("both header dialects are read: IETF fields and structured fields, X-RateLimit with a reset in seconds or as a Unix time, Retry-After")
    func readings() {
        let now = Date(timeIntervalSince1970: 1_764_000_000)
        let cases: [([String: String], QuotaReading)] = [
            (["ratelimit-limit": "100", "ratelimit-remaining": "0", "ratelimit-reset": "30"],
             QuotaReading(limit: 100, remaining: 0, reset: 30)),
            (["ratelimit": #""default";r=5;t=30"#, "ratelimit-policy": #""default";q=100;w=60"#],
             QuotaReading(limit: 100, remaining: 5, reset: 30, window: 60)),
            (["ratelimit": "limit=100, remaining=50, reset=30"], QuotaReading(limit: 100, remaining: 50, reset: 30)),
            (["ratelimit-policy": "100;w=60"], QuotaReading(limit: 100, window: 60)),
            (["ratelimit-policy": "limit=10;w=1"], QuotaReading(limit: 10, window: 1)),
            // Of two policies, the one with the least left counts.
            (["ratelimit": #""burst";r=9;t=1, "daily";r=0;t=3600"#,
              "ratelimit-policy": #""burst";q=10;w=1, "daily";q=1000;w=86400"#],
             QuotaReading(limit: 1000, remaining: 0, reset: 3600, window: 86400)),
            (["x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4999", "x-ratelimit-reset": "1764001800",
              "x-ratelimit-used": "1", "x-ratelimit-resource": "core"],
             QuotaReading(limit: 5000, remaining: 4999, reset: 1800)),
            (["x-ratelimit-remaining": "0", "x-ratelimit-reset": "60"], QuotaReading(remaining: 0, reset: 60)),
            // A Unix time already past is a reset now.
            (["x-ratelimit-remaining": "0", "x-ratelimit-reset": "1763999000"], QuotaReading(remaining: 0, reset: 0)),
            (["retry-after": "120"], QuotaReading(retryAfter: 120)),
            (["retry-after": "Mon, 24 Nov 2025 16:01:30 GMT"], QuotaReading(retryAfter: 90)),
            (["ratelimit-remaining": "many", "x-ratelimit-reset": "soon", "retry-after": "later", "ratelimit": "=;"],
             QuotaReading()),
            (["content-type": "application/json"], QuotaReading()),
        ]
        for (headers, reading) in cases {
            #expect(QuotaReading(headers: headers, now: now) == reading, "\(headers)")
        }
        #expect(QuotaReading(headers: ["x-ratelimit-remaining": "0"], now: now).isSpent)
        #expect(!QuotaReading(headers: ["x-ratelimit-remaining": "1"], now: now).isSpent)
        #expect(RetryPolicy.isRetryable(status: 403, headers: ["x-ratelimit-remaining": "0", "x-ratelimit-reset": "1764001800"]))
        #expect(!RetryPolicy.isRetryable(status: 403, headers: [:]))
    }

    @Test("max_wait is a duration from 0s to 7d, 5m when a job does not set it")
    func maxWaitKey() throws {
        let loader = JobFileLoader(environment: [:])
        let file = try loader.parse(text: """
            version: 1
            defaults: { records: l, id: id }
            jobs:
              - { name: a, url: "https://x.test/a", table: t_a }
              - { name: b, url: "https://x.test/b", table: t_b, max_wait: 0s }
              - { name: c, url: "https://x.test/c", table: t_c, max_wait: 1h }
            """, path: "jobs/x.yaml", folder: "jobs")
        #expect(file.jobs.map(\.maxWait) == [300, 0, 3600])
        do {
            _ = try loader.parse(text: """
                version: 1
                jobs:
                  - { name: a, url: "https://x.test/a", records: l, id: id, table: t_a, max_wait: 8d }
                  - { name: b, url: "https://x.test/b", records: l, id: id, table: t_b, max_wait: forever }
                """, path: "jobs/x.yaml", folder: "jobs")
            Issue.record("loaded")
        } catch {
            #expect(error.diagnostics.map(\.description) == [
                "jobs/x.yaml:3:83: 'max_wait' must be between 0s and 7d, not '8d'",
                "jobs/x.yaml:4:83: 'max_wait' must be a duration such as 30s, 5m or 1h, not 'forever'",
            ])
        }
    }

    /// Five pages of one record each, at most 2 requests a minute.
    private let paced = """
        version: 1
        jobs:
          - name: items
            url: "BASE/items?page={page}"
            pages: { from: 1, to: 5 }
            records: data.list
            id: id
            table: t_item
            concurrency: 1
            retries: 0
        """

    @Test("a walk waits for the quota's reset before sending, and no request is answered 429",
          .timeLimit(.minutes(6)), arguments: QuotaAPI.Dialect.allCases)
    func pacedWalk(dialect: QuotaAPI.Dialect) async throws {
        let time = ManualClock()
        let api = QuotaAPI(budget: 2, window: 60, dialect: dialect, time: time)
        let pages = PagedAPI(ids: [["1"], ["2"], ["3"], ["4"], ["5"]])
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            api.answer(pages.body(page: Int(request.parameter("page") ?? "") ?? 0))
        }) { server in
            async let run = harness.run(paced, server: server, clock: time.clock)
            // Pages 1-2, a wait for the reset, pages 3-4, a wait, page 5: the walk's only waits
            // of more than a request's timeout are the two for the quota.
            for _ in 0..<2 {
                time.advance(to: await time.sleeping(beyond: .seconds(45), within: .seconds(120)))
            }
            let summary = try await run
            #expect(server.requests.map(\.target) == (1...5).map { "/items?page=\($0)" })
            return summary
        }
        #expect(api.overruns == 0)
        #expect(api.windows == 3)
        #expect(summary.jobs[0].status == .ok && summary.jobs[0].retries == 0)
        #expect(summary.jobs[0].stopReason == "pages.to reached at page 5")
        #expect(try harness.ids() == ["1", "2", "3", "4", "5"])
    }

    @Test("requests in flight count against the budget: a concurrent walk never overruns it",
          .timeLimit(.minutes(6)))
    func pacedConcurrently() async throws {
        let time = ManualClock()
        let api = QuotaAPI(budget: 3, window: 60, dialect: .ietf, time: time)
        let pages = PagedAPI(ids: (1...9).map { ["\($0)"] })
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            api.answer(pages.body(page: Int(request.parameter("page") ?? "") ?? 0))
        }) { server in
            async let run = harness.run(itemsJob("pages: { from: 1, to: 9 }\nconcurrency: 3\nretries: 0\ntimeout: 1d"),
                                        server: server, clock: time.clock)
            // Three requests go, and each answer hands its slot to a request that waits for the
            // reset: once all three wait, every answer of the window has been counted.
            for _ in 0..<2 {
                time.advance(to: await time.sleeping(3, beyond: .seconds(45), within: .seconds(120)))
            }
            let summary = try await run
            #expect(server.requests.compactMap { $0.parameter("page").flatMap { Int($0) } }.sorted() == Array(1...9))
            return summary
        }
        #expect(api.overruns == 0)
        #expect(api.windows == 3)
        #expect(summary.jobs[0].status == .ok)
        #expect(try harness.ids() == (1...9).map(String.init))
    }

    @Test("a 403 whose headers say the quota is spent (GitHub) is asked again once the quota renews",
          .timeLimit(.minutes(6)))
    func spentForbidden() async throws {
        let time = ManualClock()
        let pages = PagedAPI(ids: [["1"], ["2"]])
        let refused = SharedCounter()
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            if page == 2, refused.value == 0 {
                refused.increment()
                let reset = Int((time.date.timeIntervalSince1970 + 60).rounded(.up))
                return FixtureResponse(status: 403, headers: [("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "\(reset)")],
                                       body: Array(#"{"message":"API rate limit exceeded"}"#.utf8))
            }
            return .json(pages.body(page: page))
        }) { server in
            async let run = harness.run(itemsJob("concurrency: 1"), server: server, clock: time.clock)
            time.advance(to: await time.sleeping(beyond: .seconds(45), within: .seconds(120)))
            let summary = try await run
            #expect(server.requests.map(\.target) == ["/items?page=1", "/items?page=2", "/items?page=2", "/items?page=3"])
            return summary
        }
        #expect(summary.jobs[0].status == .ok && summary.jobs[0].retries == 1)
        #expect(try harness.ids() == ["1", "2"])
    }

    @Test("no number a quota answer gives traps: below zero, NaN, infinite, 1e400 and counts too large for Int are bounded or not read")
    func hostileNumbers() async throws {
        let now = Date(timeIntervalSince1970: 1_764_000_000)
        let cases: [([String: String], QuotaReading)] = [
            (["ratelimit-policy": "100;w=1e400"], QuotaReading(limit: 100)),
            (["ratelimit-policy": "100;w=nan"], QuotaReading(limit: 100)),
            (["ratelimit-policy": "100;w=-5"], QuotaReading(limit: 100)),
            (["ratelimit-policy": "100;w=1e23"], QuotaReading(limit: 100, window: 1e23)),
            (["ratelimit-policy": "99999999999999999999;w=60"], QuotaReading(window: 60)),
            (["ratelimit": "r=-9223372036854775808, t=nan", "ratelimit-limit": "-7"], QuotaReading(limit: 0, remaining: 0)),
            (["x-ratelimit-remaining": "-9223372036854775808", "x-ratelimit-reset": "1e400"], QuotaReading(remaining: 0)),
            (["x-ratelimit-remaining": "99999999999999999999", "x-ratelimit-reset": "-inf"], QuotaReading()),
            (["x-ratelimit-remaining": "0", "x-ratelimit-reset": "1e300"], QuotaReading(remaining: 0, reset: 1e300 - 1_764_000_000)),
            (["retry-after": "99999999999999999999999999999999"], QuotaReading(retryAfter: 1e12)),
            (["retry-after": "-5"], QuotaReading(retryAfter: 0)),
            (["retry-after": "1e400"], QuotaReading()),
            (["retry-after": "nan"], QuotaReading()),
            (["retry-after": "inf"], QuotaReading()),
        ]
        for (headers, reading) in cases {
            #expect(QuotaReading(headers: headers, now: now) == reading, "\(headers)")
        }
        #expect(RetryPolicy().delay(attempt: 1, retryAfter: "99999999999999999999", now: now) == 1e12)

        let time = ManualClock()
        let quota = QuotaPacer(clock: time.clock)
        // A spent quota whose window is no number: only the host can say when it renews, so it is asked.
        #expect(try await quota.admit(host: "a:80", maxWait: 300) == nil)
        quota.heard(host: "a:80", status: 200, headers: ["ratelimit-policy": "100;w=1e400", "ratelimit-remaining": "0"])
        #expect(try await quota.admit(host: "a:80", maxWait: 300) == nil)
        // The least Int as what is left, with a request in flight.
        #expect(try await quota.admit(host: "b:80", maxWait: 300) == nil)
        #expect(try await quota.admit(host: "b:80", maxWait: 300) == nil)
        quota.heard(host: "b:80", status: 200, headers: ["x-ratelimit-remaining": "-9223372036854775808", "x-ratelimit-reset": "60"])
        #expect(try await quota.admit(host: "b:80", maxWait: 30) == QuotaPacer.Wait(until: time.now + .seconds(60), cause: .quota))
        // A reset of 1e300 seconds, and a Retry-After too long for Int: the longest wait, deferred.
        #expect(try await quota.admit(host: "c:80", maxWait: 300) == nil)
        quota.heard(host: "c:80", status: 200, headers: ["x-ratelimit-remaining": "0", "x-ratelimit-reset": "1e300"])
        #expect(try await quota.admit(host: "c:80", maxWait: 300) == QuotaPacer.Wait(until: time.now + .seconds(1e12), cause: .quota))
        #expect(try await quota.admit(host: "d:80", maxWait: 300) == nil)
        quota.heard(host: "d:80", status: 429, headers: ["retry-after": "99999999999999999999"])
        #expect(try await quota.admit(host: "d:80", maxWait: 300) == QuotaPacer.Wait(until: time.now + .seconds(1e12), cause: .retryAfter))
    }

    @Test("the quota is the host's: a spent host holds back its requests only, and a Retry-After of a 429 holds back the host")
    func perHost() async throws {
        let time = ManualClock()
        let quota = QuotaPacer(clock: time.clock)
        #expect(try await quota.admit(host: "a:80", maxWait: 300) == nil)
        quota.heard(host: "a:80", status: 200, headers: ["x-ratelimit-remaining": "0", "x-ratelimit-reset": "600"])
        #expect(try await quota.admit(host: "b:80", maxWait: 300) == nil)
        quota.heard(host: "b:80", status: 429, headers: ["retry-after": "30"])
        // Longer than max_wait: not waited, and said.
        #expect(try await quota.admit(host: "a:80", maxWait: 300) == QuotaPacer.Wait(until: time.now + .seconds(600), cause: .quota))
        #expect(quota.nextTurn(host: "b:80") == QuotaPacer.Wait(until: time.now + .seconds(30), cause: .retryAfter))
        #expect(try await quota.admit(host: "c:80", maxWait: 300) == nil)
        // Within max_wait: waited for.
        let admitted = Task { try await quota.admit(host: "b:80", maxWait: 300) }
        time.advance(to: await time.sleeping(beyond: .seconds(10), within: .seconds(60)))
        #expect(try await admitted.value == nil)
        // A wait that would outlast --max-time is not waited either.
        let bounded = QuotaPacer(clock: time.clock, deadline: time.now + .seconds(20))
        bounded.heard(host: "b:80", status: 503, headers: ["retry-after": "30"])
        #expect(try await bounded.admit(host: "b:80", maxWait: 300)?.cause == .retryAfter)
    }

    @Test("a quota spent until after max_wait defers the job without sending the request: the pages before it stay")
    func spentDefers() async throws {
        let time = ManualClock()
        let api = QuotaAPI(budget: 2, window: 3600, dialect: .ietf, time: time)
        let pages = PagedAPI(ids: [["1"], ["2"], ["3"]])
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            api.answer(pages.body(page: Int(request.parameter("page") ?? "") ?? 0))
        }) { server in
            let summary = try await harness.run(itemsJob("concurrency: 1"), server: server, clock: time.clock)
            #expect(server.requests.map(\.target) == ["/items?page=1", "/items?page=2"])
            let until = Timestamp.string(Date(timeIntervalSince1970: (time.date.timeIntervalSince1970 + 3600).rounded(.up)))
            #expect(summary.jobs.map(\.error) == ["job 'items': GET \(server.base)/items?page=3: not sent: the host's request "
                + "quota is spent until it renews in 1h, longer than max_wait 5m; deferred until \(until): page 3 not stored, "
                + "pages 1-2 kept"])
            #expect(summary.jobs[0].resumeAfter == until)
            return summary
        }
        #expect(api.overruns == 0)
        #expect(summary.jobs.map(\.status) == [.deferred] && !summary.timedOut && summary.signal == nil)
        #expect(try harness.ids() == ["1", "2"])
    }

    @Test("a wait within max_wait that would outlast --max-time defers the job instead of being cut by it")
    func waitPastMaxTime() async throws {
        let time = ManualClock()
        let api = QuotaAPI(budget: 1, window: 240, dialect: .ietf, time: time)
        let pages = PagedAPI(ids: [["1"], ["2"]])
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            api.answer(pages.body(page: Int(request.parameter("page") ?? "") ?? 0))
        }) { server in
            try await harness.run(itemsJob("concurrency: 1"), server: server, clock: time.clock, maxTime: .seconds(120))
        }
        #expect(summary.jobs[0].status == .deferred && !summary.timedOut && summary.signal == nil)
        #expect(summary.jobs[0].error?.contains(": not sent: the host's request quota is spent until it renews in 4m, "
            + "which would outlast --max-time; deferred until ") == true)
        #expect(try harness.ids() == ["1"])
    }
}
