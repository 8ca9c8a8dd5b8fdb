import Foundation
import GRDB
@testable import MirrorCore
@testable import MirrorModel
@testable import MirrorExport
import MirrorTestSupport
import ServiceLifecycle
import Testing

private let api = PagedAPI(ids: [["1", "2"], ["3", "4"], ["5"]])

@Suite("cancellation and store failures", .timeLimit(.minutes(6)))
struct CancellationTests {
    @Test("a signal cancels the requests in flight, sends nothing more, records the job as interrupted, and a second one forces")
    func stopped() async throws {
        let harness = try Harness()
        let gauge = InFlightGauge()
        let held = Turns()
        let (signals, send) = AsyncStream.makeStream(of: Int32.self)
        let (summary, requests) = try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            if page >= 2 {
                // Held until the run has ended.
                gauge.enter()
                defer { gauge.leave() }
                await held.wait()
            }
            return .json(api.body(page: page))
        }) { server in
            async let run = harness.run(itemsJob("concurrency: 3\nretries: 4"), server: server, signals: .stream(signals))
            // Pages 2-3 are in flight (page 1 was full), page 1 is stored.
            await gauge.waitForEntered(2)
            while (try? harness.ids()) != ["1", "2"] { try await Task.sleep(for: .milliseconds(5)) }
            send.yield(SIGTERM)
            let summary = try await run
            held.giveAll()
            return (summary, server.requests.map(\.target).sorted())
        }
        #expect(requests == ["/items?page=1", "/items?page=2", "/items?page=3"])
        let report = summary.jobs[0]
        #expect(report.status == .interrupted)
        #expect(report.stopReason == StopReason.interrupted.description)
        #expect(report.error == "job 'items': interrupted at page 2; page 1 kept")
        #expect(summary.interrupted)
        #expect(summary.signal == SIGTERM)
        #expect(!summary.timedOut)
        #expect(try harness.ids() == ["1", "2"])
        let rows = try await harness.database("t_item.sqlite").read { db in
            (try String.fetchAll(db, sql: "SELECT result FROM _mirror_runs"),
             try Row.fetchAll(db, sql: "SELECT state, next_page FROM _mirror_walks").map { "\($0["state"] as String) \($0["next_page"] as Int)" })
        }
        #expect(rows.0 == ["interrupted"])
        #expect(rows.1 == ["interrupted 2"])
    }

    @Test("a stop cuts what runs under cancelWhenGracefulShutdown and lets the rest end; a second signal forces")
    func forced() async throws {
        let (signals, send) = AsyncStream.makeStream(of: Int32.self)
        let (events, event) = AsyncStream.makeStream(of: String.self)
        let finish = Turns()
        async let ran = GracefulStop.run(.stream(signals), forced: { event.yield("forced \($0)") }) {
            // What a stop cuts (a walk)...
            let cut = (try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(3600)) }) == nil
            event.yield(cut ? "cut" : "slept")
            // ...and what runs on after it (the bookkeeping): here it waits for the test.
            await finish.wait()
            return "recorded"
        }
        var iterator = events.makeAsyncIterator()
        send.yield(SIGINT)
        #expect(await iterator.next() == "cut")
        send.yield(SIGTERM)
        #expect(await iterator.next() == "forced 15")
        finish.give()
        let (value, stop) = try await ran
        #expect(value == "recorded")
        #expect(stop == .signal(SIGINT))
    }

    @Test("--max-time stops the run as a signal would: interrupted at the page in flight, pages before it kept, and the next run resumes",
          .timeLimit(.minutes(6)))
    func maxTime() async throws {
        let harness = try Harness()
        let time = ManualClock()
        let held = Turns()
        // 5 pages of 2 records; page 4 is held until the first run has ended.
        let pages = PagedAPI(ids: (1...5).map { page in ["\(page)a", "\(page)b"] })
        let summary = try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            if page == 4 { await held.wait() }
            return .json(pages.body(page: page))
        }) { server in
            async let run = harness.run(itemsJob("concurrency: 1"), server: server, clock: time.clock, maxTime: .seconds(15 * 60))
            // Pages 1-3 are stored and page 4 is asked for; then 15 minutes pass.
            while server.requests.last?.parameter("page") != "4" { try await Task.sleep(for: .milliseconds(5)) }
            while (try? harness.ids().count) != 6 { try await Task.sleep(for: .milliseconds(5)) }
            time.advance(by: .seconds(15 * 60))
            let summary = try await run
            held.giveAll()
            let rerun = try await harness.run(itemsJob("concurrency: 1"), server: server)
            #expect(rerun.jobs.map(\.status) == [.ok] && rerun.jobs[0].pages.total == 3 && rerun.jobs[0].resumedAt == 4)
            #expect(rerun.jobs[0].records == .init(new: 4, updated: 0, unchanged: 0, rejected: 0, pruned: 0))
            return summary
        }
        #expect(summary.timedOut)
        #expect(summary.interrupted)
        #expect(summary.jobs.map(\.status) == [.interrupted])
        #expect(summary.jobs.map(\.error) == ["job 'items': interrupted at page 4; pages 1-3 kept"])
        #expect(try harness.ids() == (1...5).flatMap { ["\($0)a", "\($0)b"] })
    }

    @Test("a store that fails in mid-walk fails the job; the pages before stay and the next run resumes at the page")
    func storeFailure() async throws {
        let harness = try Harness()
        try await FixtureServer.with({ request in
            .json(api.body(page: Int(request.parameter("page") ?? "") ?? 0))
        }) { server in
            _ = try await harness.run(itemsJob("pages: { from: 1, to: 1 }"), server: server)
            // The database refuses page 2's records from now on.
            try await harness.database("t_item.sqlite").write { db in
                try db.execute(sql: """
                    CREATE TRIGGER refuse BEFORE INSERT ON t_item WHEN NEW.id = '4'
                    BEGIN SELECT RAISE(ABORT, 'the disk is full'); END
                    """)
                try db.execute(sql: "UPDATE _mirror_walks SET state = 'failed', next_page = 2, position = 2")
            }
            let failed = try await harness.run(itemsJob("concurrency: 1"), server: server)
            let report = failed.jobs[0]
            #expect(report.status == .failed)
            #expect(report.error?.hasPrefix("job 'items': GET \(server.base)/items?page=2: HTTP 200: cannot store the page: ") == true)
            #expect(report.error?.contains("the disk is full") == true)
            #expect(report.error?.hasSuffix("; page 2 not stored, nothing stored") == true)
            #expect(try harness.ids() == ["1", "2"])

            try await harness.database("t_item.sqlite").write { db in try db.execute(sql: "DROP TRIGGER refuse") }
            let resumed = try await harness.run(itemsJob("concurrency: 1"), server: server)
            #expect(resumed.jobs[0].resumedAt == 2)
            #expect(resumed.jobs[0].status == .ok)
        }
        #expect(try harness.ids() == ["1", "2", "3", "4", "5"])
    }
}
