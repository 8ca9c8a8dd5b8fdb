import Foundation
import Logging
@testable import MirrorCore
@testable import MirrorHTTP
@testable import MirrorModel
import MirrorTestSupport
import Synchronization
import Testing

@Suite("parallel jobs", .timeLimit(.minutes(6)))
struct ParallelTests {
    /// Jobs `a` and `b`, one page each, run with `parallel`; what happened, in order: each
    /// request as the server sees it (`ask /a`) and each job's end (`end a`). With `hold`,
    /// `/a` is answered only once `/b` has been asked for.
    func run(parallel: Int, hold: Bool) async throws -> (events: [String], summary: RunSummary) {
        let harness = try Harness()
        let events = Mutex<[String]>([])
        let askedB = Turns()
        let summary = try await FixtureServer.with({ request in
            events.withLock { $0.append("ask \(request.path)") }
            if request.path == "/b" {
                askedB.giveAll()
            } else if hold {
                await askedB.wait()
            }
            return .json(#"{"data":{"list":[{"id":"\#(request.path)"}]}}"#)
        }) { server in
            let yaml = """
                version: 1
                defaults: { records: data.list, id: id }
                jobs:
                  - { name: a, url: "BASE/a", table: t_a }
                  - { name: b, url: "BASE/b", table: t_b }
                """
            let file = try harness.load(yaml, server: server)
            var options = Runner.Options()
            options.output = harness.output
            options.parallel = parallel
            let progress: ProgressHandler = { progress in
                if progress.ending != nil { events.withLock { $0.append("end \(progress.job)") } }
            }
            return try await Runner(client: HTTPClient(), logger: .init(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }),
                                    progress: progress)
                .run([file], options: options)
        }
        return (events.withLock { $0 }, summary)
    }

    @Test("jobs of one run proceed concurrently; the summary keeps file order", .timeLimit(.minutes(6)))
    func concurrent() async throws {
        // `/a` is answered only once `/b` is asked for: were the jobs run one at a time, this
        // run would never end.
        let (events, summary) = try await run(parallel: 2, hold: true)
        #expect(Set(events.prefix(2)) == ["ask /a", "ask /b"])
        #expect(summary.jobs.map(\.job) == ["a", "b"])
        #expect(summary.allSucceeded)
    }

    @Test("--parallel 1 runs one job at a time")
    func sequential() async throws {
        let (events, summary) = try await run(parallel: 1, hold: false)
        #expect(events == ["ask /a", "end a", "ask /b", "end b"])
        #expect(summary.jobs.map(\.job) == ["a", "b"])
        #expect(summary.allSucceeded)
    }

    @Test("the scheduler starts no more tasks than items, whatever the width, and ends when they do",
          .timeLimit(.minutes(6)))
    func widthBeyondItems() async {
        let started = Mutex(0)
        for width in [Int.max, 1 << 40, 3, 0] {
            let results = await JobScheduler.map([10, 20, 30], width: width) { item in
                started.withLock { $0 += 1 }
                return item + 1
            }
            #expect(results == [11, 21, 31], "width \(width)")
        }
        #expect(started.withLock { $0 } == 12)
        #expect(await JobScheduler.map([Int](), width: .max) { $0 }.isEmpty)
    }

    @Test("an item starts only once the item it comes after has ended; the others do not wait for it",
          .timeLimit(.minutes(6)))
    func after() async {
        let log = Mutex<[String]>([])
        // Item 0 ends only once item 3 has started: were 3 held back, this would never end.
        let (started3, signal) = AsyncStream.makeStream(of: Void.self)
        let results = await JobScheduler.map([0, 1, 2, 3], width: 4, after: [nil, 0, 1, nil]) { item in
            log.withLock { $0.append("start \(item)") }
            if item == 3 { signal.yield() }
            if item == 0 { for await _ in started3 { break } }
            for _ in 0..<20 { await Task.yield() }
            log.withLock { $0.append("end \(item)") }
            return item * 10
        }
        #expect(results == [0, 10, 20, 30])
        let events = log.withLock { $0 }
        func at(_ event: String) -> Int { events.firstIndex(of: event) ?? -1 }
        #expect(at("end 0") < at("start 1"))
        #expect(at("end 1") < at("start 2"))
    }
}
