@testable import MirrorCore
@testable import MirrorHTTP
@testable import MirrorModel
import MirrorTestSupport
@testable import MirrorWalk
import Synchronization
import Testing

@Suite("Page budget", .timeLimit(.minutes(6)))
struct PageBudgetTests {
    /// Yields until `budget` has `count` requests waiting (they wait on no clock).
    func waiting(_ budget: PageBudget, _ count: Int) async {
        for _ in 0 ..< 100_000 where budget.waiting != count { await Task.yield() }
        #expect(budget.waiting == count)
    }

    @Test("pages ahead wait for the bytes of the pages before them; the page stored next never waits")
    func ahead() async throws {
        let budget = PageBudget(head: 1, limit: 100)
        try await budget.take(500, for: 1)
        try await budget.take(60, for: 2)
        let third = Task { try await budget.take(60, for: 3) }
        await waiting(budget, 1)
        // The stored page's bytes never counted as ahead: page 3 still waits.
        budget.release(1)
        #expect(budget.waiting == 1)
        // Page 2 is stored next: its 60 bytes are no longer ahead, and page 3's fit.
        budget.moveHead(to: 2)
        try await third.value
        #expect(budget.waiting == 0)
        // Page 4 waits behind page 3's 60 bytes until page 3 is stored next.
        let fourth = Task { try await budget.take(50, for: 4) }
        await waiting(budget, 1)
        budget.release(2)
        budget.moveHead(to: 3)
        try await fourth.value
    }

    @Test("one page ahead may hold more than the limit when it is the only one")
    func alone() async throws {
        let budget = PageBudget(head: 0, limit: 10)
        try await budget.take(1_000, for: 1)
        let second = Task { try await budget.take(1, for: 2) }
        await waiting(budget, 1)
        budget.release(1)
        try await second.value
    }

    @Test("a page waiting for bytes ends with its task's cancellation")
    func cancelled() async throws {
        let budget = PageBudget(head: 0, limit: 10)
        try await budget.take(10, for: 1)
        let waiter = Task { try await budget.take(1, for: 2) }
        await waiting(budget, 1)
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(budget.waiting == 0)
    }

    @Test("a walk whose pages ahead are held to one byte still walks every page once, in order")
    func walk() async throws {
        let harness = try Harness()
        // 12 pages of 50 records of about 100 bytes: every page ahead is over the limit.
        let api = PagedAPI(records: (0 ..< 12).map { page in
            (0 ..< 50).map { #"{"id":"\#(page * 50 + $0)","text":"\#(String(repeating: "x", count: 80))"}"# }
        })
        let summary = try await FixtureServer.with({ request in
            .json(api.body(page: Int(request.parameter("page") ?? "") ?? 0))
        }) { server in
            let summary = try await harness.run(itemsJob("pages: { from: 1, to: 12 }\nconcurrency: 4"), server: server,
                                                pagesAhead: 1)
            #expect(server.requests.map(\.target).sorted() == (1 ... 12).map { "/items?page=\($0)" }.sorted())
            return summary
        }
        #expect(summary.jobs.first?.succeeded == true)
        #expect(try harness.ids() == (0 ..< 600).map(String.init))
    }

    @Test("a body waiting for the pages before it longer than its timeout is not timed out: the timeout counts the exchange",
          .timeLimit(.minutes(6)))
    func waitIsNotTimed() async throws {
        let time = ManualClock()
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: 1 << 20)
        try await FixtureServer.with({ _ in FixtureResponse(body: body) }) { server in
            // Page 3 holds the one byte pages ahead may hold: page 2 waits from its first chunk.
            let budget = PageBudget(head: 1, limit: 1)
            try await budget.take(1, for: 3)
            let url = server.base + "/items?page=2"
            let request = HTTPRequest(method: "GET", url: RedactedURL(real: url, shown: url), headers: [], body: nil,
                                      timeout: 6, maxBytes: 2 << 20)
            let sent = Task {
                try await HTTPClient(clock: time.clock).send(request, admit: { bytes in try await budget.take(bytes, for: 2) })
            }
            // Its response has arrived: it waits for its turn.
            while budget.waiting == 0 { try await Task.sleep(for: .milliseconds(5)) }
            #expect(budget.waiting == 1)
            // The page before it takes longer than the timeout to be stored.
            time.advance(by: .seconds(60))
            budget.release(1)
            budget.moveHead(to: 2)
            let response = try await sent.value
            #expect(response.status == 200)
            #expect(response.body == body)
        }
    }

    @Test("pages ahead of a page that takes longer than the timeout to arrive wait for it and are requested once",
          .timeLimit(.minutes(6)))
    func walkWaitsPastTimeout() async throws {
        let harness = try Harness()
        let time = ManualClock()
        // 5 pages of about 200 KB: every page ahead is over the one-byte limit.
        let api = PagedAPI(records: (0 ..< 5).map { page in
            (0 ..< 2_000).map { #"{"id":"\#(page * 2_000 + $0)","text":"\#(String(repeating: "x", count: 80))"}"# }
        })
        let tries = Mutex(0)
        let summary = try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            if page == 3 {
                // Page 3 answers 15 s late on the run's clock, first with a 503: with its retry it
                // arrives after 30 s, each try within the 28 s timeout.
                let first = tries.withLock { tries in
                    tries += 1
                    return tries == 1
                }
                try? await time.clock.sleep(for: .seconds(15))
                if first { return .text("busy", status: 503) }
            }
            return .json(api.body(page: page))
        }) { server in
            async let run = harness.run(itemsJob("pages: { from: 1, to: 5 }\nconcurrency: 3\ntimeout: 28s\nretries: 1"),
                                        server: server, pagesAhead: 1, clock: time.clock, retry: RetryPolicy(baseDelay: 0))
            // Pages 1 and 2 come back full, and the read-ahead widens to 3: pages 4 and 5 are
            // asked for while page 3 is held, and wait for it all along from their first bytes.
            // Each try of page 3 is held until the time moves on by 15 s; the retry is sent at once.
            while server.requests.filter({ $0.parameter("page") != "3" }).count < 4 {
                try await Task.sleep(for: .milliseconds(5))
            }
            for _ in 1 ... 2 {
                time.advance(to: await time.sleeping(beyond: .seconds(14), within: .seconds(15)))
            }
            let summary = try await run
            #expect(server.requests.map(\.target).sorted()
                == ["/items?page=1", "/items?page=2", "/items?page=3", "/items?page=3", "/items?page=4", "/items?page=5"])
            return summary
        }
        #expect(summary.jobs.map(\.error) == [nil])
        #expect(try harness.ids() == (0 ..< 10_000).map(String.init))
    }
}
