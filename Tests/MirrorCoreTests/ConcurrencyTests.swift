import Foundation
import GRDB
import Logging
@testable import MirrorCore
@testable import MirrorHTTP
@testable import MirrorModel
import MirrorTestSupport
import Synchronization
import Testing

/// Requests the server is answering at once, and the most it ever saw.
final class InFlightGauge: Sendable {
    private struct State {
        var now = 0
        var most = 0
        var entered = 0
        /// Waits for a number of requests to have entered.
        var waiting: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())
    var most: Int { state.withLock { $0.most } }
    var entered: Int { state.withLock { $0.entered } }

    /// Counts a request in; returns how many entered so far, this one included.
    @discardableResult
    func enter() -> Int {
        let (entered, ready) = state.withLock { state in
            state.now += 1
            state.entered += 1
            state.most = max(state.most, state.now)
            let entered = state.entered
            let ready = state.waiting.filter { $0.count <= entered }.map(\.continuation)
            state.waiting.removeAll { $0.count <= entered }
            return (entered, ready)
        }
        for continuation in ready { continuation.resume() }
        return entered
    }

    func leave() { state.withLock { $0.now -= 1 } }

    /// A gate: waits until `count` requests have entered. (A walk that never sends them
    /// hangs its test until the test's time limit.)
    func waitForEntered(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state in
                if state.entered >= count { return true }
                state.waiting.append((count, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }
}

/// Twenty pages of two records; page `n` answers after a delay that shrinks with `n`,
/// so responses arrive in the reverse of walk order.
private let twenty = PagedAPI(ids: (1...20).map { ["\($0)a", "\($0)b"] })

/// With `held`, the requests of those numbers (the first is 1) are held until all of them
/// have arrived: they are in flight together whatever the load on the machine.
private func slowServer(_ gauge: InFlightGauge, held: ClosedRange<Int>? = nil) -> @Sendable (FixtureRequest) async -> FixtureResponse {
    { request in
        let entered = gauge.enter()
        defer { gauge.leave() }
        if let held, held.contains(entered) { await gauge.waitForEntered(held.upperBound) }
        let page = Int(request.parameter("page") ?? "") ?? 0
        try? await Task.sleep(for: .milliseconds(30 + max(0, 21 - page) * 3))
        return .json(twenty.body(page: page))
    }
}

@Suite("concurrency", .timeLimit(.minutes(6)))
struct ConcurrencyTests {
    @Test("a {page} walk keeps `concurrency` requests in flight and still stores in walk order", .timeLimit(.minutes(6)))
    func window() async throws {
        let harness = try Harness()
        let gauge = InFlightGauge()
        // Requests 4-7 come once the read-ahead has ramped up to 4 (pages 1, then 2-3, were full).
        let summary = try await FixtureServer.with(slowServer(gauge, held: 4...7)) { server in
            let summary = try await harness.run(itemsJob("concurrency: 4\npages: { from: 1, to: 20 }"), server: server)
            #expect(server.requests.count == 20)
            return summary
        }
        #expect(gauge.most == 4)
        #expect(summary.jobs[0].stopReason == StopReason.endOfPages(page: 20).description)
        #expect(try harness.ids() == (1...20).flatMap { ["\($0)a", "\($0)b"] })
        let positions = try await harness.database("t_item.sqlite").read { db in
            try Int.fetchAll(db, sql: "SELECT position FROM t_item ORDER BY position")
        }
        #expect(positions == Array(0..<40))
    }

    @Test("read-ahead starts at one request and doubles while pages come back full: short walks ask little past their end",
          .timeLimit(.minutes(6)))
    func rampUp() async throws {
        let onePage = PagedAPI(ids: [["1", "2"]])
        let threePages = PagedAPI(ids: [["1", "2", "3"], ["4", "5"], ["6"]])
        let cases: [(api: PagedAPI, keys: String, extra: String, asked: [Int], ids: [String])] = [
            (onePage, "", "", [1, 2, 3], ["1", "2"]),
            (threePages, "", "", [1, 2, 3, 4], ["1", "2", "3", "4", "5", "6"]),
            // The first page's last page or total bounds the read-ahead at once.
            (threePages, "stop: { last_page: data.last }", #","last":3"#, [1, 2, 3], ["1", "2", "3", "4", "5", "6"]),
            (threePages, "stop: { total: data.total }", #","total":6"#, [1, 2, 3], ["1", "2", "3", "4", "5", "6"]),
        ]
        for concurrency in [4, 8] {
            for (api, keys, extra, asked, ids) in cases {
                let harness = try Harness()
                let gauge = InFlightGauge()
                // The page whose response ends the walk: the empty one past the last, or the
                // last one announced. Its response waits (30 s at most) until every request
                // the ramp is to make has come, so that none is cut off unsent by the end.
                let end = keys.isEmpty ? api.pages.count + 1 : api.pages.count
                try await FixtureServer.with({ request in
                    gauge.enter()
                    defer { gauge.leave() }
                    let page = Int(request.parameter("page") ?? "") ?? 0
                    if page == end {
                        for _ in 0..<3000 where gauge.entered < asked.count { try? await Task.sleep(for: .milliseconds(10)) }
                    }
                    return .json(api.body(page: page, extra: extra))
                }) { server in
                    let summary = try await harness.run(itemsJob("concurrency: \(concurrency)\n" + keys), server: server)
                    #expect(try #require(summary.jobs.first).succeeded)
                    #expect(server.requests.map { Int($0.parameter("page") ?? "") ?? 0 }.sorted() == asked,
                            "concurrency \(concurrency), \(api.pages.count) pages \(keys)")
                }
                #expect(try harness.ids() == ids)
            }
        }
    }

    @Test("a long walk still reaches full concurrency", .timeLimit(.minutes(6)))
    func rampToFull() async throws {
        let harness = try Harness()
        let gauge = InFlightGauge()
        let fifty = PagedAPI(ids: (1...50).map { ["\($0)a", "\($0)b"] })
        let summary = try await FixtureServer.with({ request in
            let entered = gauge.enter()
            defer { gauge.leave() }
            // Requests 8 to 15 are held until all of them have come: 8 in flight at once,
            // whatever the load on the machine.
            if (8...15).contains(entered) { await gauge.waitForEntered(15) }
            return .json(fifty.body(page: Int(request.parameter("page") ?? "") ?? 0))
        }) { server in
            try await harness.run(itemsJob("concurrency: 8"), server: server)
        }
        #expect(gauge.most == 8)
        #expect(try #require(summary.jobs.first).stopReason == StopReason.emptyPage(page: 51).description)
        #expect(try harness.ids() == (1...50).flatMap { ["\($0)a", "\($0)b"] })
    }

    @Test("concurrency 1 walks one request at a time and asks for nothing past the stop")
    func sequential() async throws {
        let harness = try Harness()
        let gauge = InFlightGauge()
        try await FixtureServer.with(slowServer(gauge)) { server in
            _ = try await harness.run(itemsJob("concurrency: 1\npages: { from: 15 }"), server: server)
            #expect(server.requests.map(\.target) == (15...21).map { "/items?page=\($0)" })
        }
        #expect(gauge.most == 1)
        #expect(try harness.ids() == (15...20).flatMap { ["\($0)a", "\($0)b"] })
    }

    @Test("a window that runs past the empty page stores nothing of the pages after it")
    func pastTheEnd() async throws {
        let harness = try Harness()
        let gauge = InFlightGauge()
        let summary = try await FixtureServer.with(slowServer(gauge)) { server in
            let summary = try await harness.run(itemsJob("concurrency: 8\npages: { from: 11 }"), server: server)
            // Pages 21-35 may have been asked for (up to 2 x 8 - 1 past the end); page 21 is
            // empty and ends the walk.
            #expect(server.requests.count <= 10 + 16)
            return summary
        }
        #expect(summary.jobs[0].stopReason == StopReason.emptyPage(page: 21).description)
        #expect(summary.jobs[0].pages.total == 11)
        #expect(try harness.ids() == (11...20).flatMap { ["\($0)a", "\($0)b"] })
        let pages = try await harness.database("t_item.sqlite").read { db in
            try Int.fetchAll(db, sql: "SELECT page FROM _mirror_pages ORDER BY page")
        }
        // The empty page 21 is kept for `mirror serve`, with no ids; nothing after it.
        #expect(pages == Array(11...21))
        #expect(try await harness.database("t_item.sqlite").read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM _mirror_pages WHERE page = 21 AND ids IS NULL AND envelope IS NOT NULL")
        } == 1)
    }

    @Test("a slow page does not hold up the slots of the pages after it", .timeLimit(.minutes(6)))
    func slowHead() async throws {
        let harness = try Harness()
        let gauge = InFlightGauge()
        try await FixtureServer.with({ request in
            gauge.enter()
            defer { gauge.leave() }
            let page = Int(request.parameter("page") ?? "") ?? 0
            // Page 5 is slow: it answers once 12 requests have come, the pages after it having
            // handed their slots on up to page 12 (within 2 x 4 pages of page 5).
            if page == 5 { await gauge.waitForEntered(12) }
            return .json(twenty.body(page: page))
        }) { server in
            _ = try await harness.run(itemsJob("concurrency: 4\npages: { from: 1, to: 20 }"), server: server)
            // While page 5 is slow, the pages after it hand their slots on to the pages after them.
            #expect(Set(server.requests.prefix(12).map(\.target)) == Set((1...12).map { "/items?page=\($0)" }))
            #expect(server.requests.count == 20)
        }
        #expect(gauge.most <= 4)
        #expect(try harness.ids() == (1...20).flatMap { ["\($0)a", "\($0)b"] })
    }

    @Test("a failure inside the window fails at that page; pages before it are stored, none after")
    func failureInWindow() async throws {
        let harness = try Harness()
        try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            if page == 5 { return .text("gone", status: 410) }
            return .json(twenty.body(page: page))
        }) { server in
            let summary = try await harness.run(itemsJob("concurrency: 6\npages: { from: 1, to: 20 }"), server: server)
            #expect(summary.jobs[0].error
                == "job 'items': GET \(server.base)/items?page=5: HTTP 410: unexpected status (gone): gone; page 5 not stored, pages 1-4 kept")
        }
        #expect(try harness.ids() == (1...4).flatMap { ["\($0)a", "\($0)b"] })
    }

    @Test("--max-pages caps the window too")
    func maxPages() async throws {
        let harness = try Harness()
        let gauge = InFlightGauge()
        try await FixtureServer.with(slowServer(gauge)) { server in
            _ = try await harness.run(itemsJob("concurrency: 8"), server: server, maxPages: 3)
            #expect(server.requests.map(\.target).sorted() == (1...3).map { "/items?page=\($0)" })
        }
    }

    @Test("progress reports the start, every stored page in order, and the end")
    func progress() async throws {
        let harness = try Harness()
        let reports = Mutex<[JobProgress]>([])
        try await FixtureServer.with(slowServer(InFlightGauge())) { server in
            let file = try harness.load(itemsJob("concurrency: 3\npages: { from: 1, to: 4 }"), server: server)
            var options = Runner.Options()
            options.output = harness.output
            _ = try await Runner(client: HTTPClient(), logger: Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }),
                                 progress: { progress in reports.withLock { $0.append(progress) } })
                .run([file], options: options)
        }
        // Pages 1-4 have bodies of the same length.
        let size = twenty.body(page: 1).utf8.count
        let seen = reports.withLock { $0 }
        #expect(seen.count == 6)
        #expect(seen.map(\.job) == Array(repeating: "items", count: 6))
        #expect(seen.map(\.page) == [nil, 1, 2, 3, 4, 4] && seen.dropFirst().map(\.lastPage) == Array(repeating: 4, count: 5))
        #expect(seen.map { $0.walk.counts.new + $0.walk.counts.updated + $0.walk.counts.unchanged } == [0, 2, 4, 6, 8, 8])
        #expect(seen.map(\.walk.counts.new) == [0, 2, 4, 6, 8, 8])
        #expect(seen.map(\.ending) == [nil, nil, nil, nil, nil, .complete])
        for report in [seen.first, seen.last] {
            #expect(report?.walk.pagesNotModified == 0 && report?.walk.pagesSkipped == 0 && report?.walk.retries == 0)
            #expect(report?.files == nil)
        }
        #expect(seen.first?.walk.bytes == 0 && seen.last?.walk.bytes == 4 * size)
    }

    @Test("an announced last page bounds the read-ahead at once; a page without the value keeps the last one announced")
    func announcedLastPage() async throws {
        let harness = try Harness()
        try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            return .json(twenty.body(page: page, extra: #","last":2"#))
        }) { server in
            let summary = try await harness.run(itemsJob("concurrency: 4\nstop: { last_page: data.last }"), server: server)
            // Page 1 announces page 2 as the last: no request goes past it.
            #expect(server.requests.map(\.target).sorted() == ["/items?page=1", "/items?page=2"])
            #expect(summary.jobs[0].stopReason == StopReason.lastPage(page: 2).description)
        }
        let sparse = try Harness()
        try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            return .json(twenty.body(page: page, extra: page == 1 ? #","last":2"# : ""))
        }) { server in
            let summary = try await sparse.run(itemsJob("concurrency: 1\nstop: { last_page: data.last }"), server: server)
            #expect(server.requests.map(\.target) == ["/items?page=1", "/items?page=2"])
            #expect(summary.jobs[0].stopReason == StopReason.lastPage(page: 2).description)
        }
    }
}
