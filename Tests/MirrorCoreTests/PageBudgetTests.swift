@testable import MirrorCore
import MirrorTestSupport
import Testing

@Suite("Page budget")
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
}
