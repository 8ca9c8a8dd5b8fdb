import Foundation
import MirrorCore
@testable import MirrorModel
import MirrorTestSupport
import Testing

/// 5 pages of 50 records, each id `page·1000 + n`.
let heldPageIDs = (1...5).map { page in (0..<50).map { "\(page * 1000 + $0)" } }

/// Serves `heldPageIDs` (then an empty page) with page `held` held until `gate` opens, and
/// writes `folder/jobs.yaml`: one job, `events`, walking it one page at a time into `out/`,
/// with an hour's timeout: only the test ends a request for the held page. The gate opens
/// when `body` ends, however it ends: the server's shutdown waits for the requests in flight.
func withHeldPage(_ held: Int, gate: SlowGate, jobsIn folder: String,
                          _ body: (FixtureServer) async throws -> Void) async throws {
    try await FixtureServer.with({ request in
        let page = Int(request.parameter("page") ?? "") ?? 0
        while page == held, gate.isClosed, !Task.isCancelled { try? await Task.sleep(for: .milliseconds(20)) }
        let ids = page >= 1 && page <= 5 ? heldPageIDs[page - 1] : []
        return .json(#"{"data":{"list":[\#(ids.map { #"{"id":"\#($0)"}"# }.joined(separator: ","))]}}"#)
    }) { server in
        defer { gate.open() }
        try """
            version: 1
            output: out
            jobs:
              - name: events
                url: "\(server.base)/events?page={page}"
                records: data.list
                id: id
                table: t_event
                concurrency: 1
                timeout: 1h
            """.write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
        try await body(server)
    }
}

@Suite("a stopped run", .timeLimit(.minutes(6)))
struct SignalTests {
    @Test("SIGTERM, SIGINT and SIGHUP: the run stops, records itself as interrupted, keeps whole pages, releases its lock, and the next run resumes",
          arguments: [(SIGTERM, Int32(143)), (SIGINT, Int32(130)), (SIGHUP, Int32(129))])
    func graceful(signal: Int32, status: Int32) async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let gate = SlowGate()
        try await withHeldPage(4, gate: gate, jobsIn: folder) { server in
            let database = folder + "/out/t_event.sqlite"
            let run = try Child(mirrorBinary.path, ["run", "jobs.yaml", "--report", "report.json"], in: folder,
                                environment: ProcessInfo.processInfo.environment, stdout: folder + "/.stdout",
                                stderr: folder + "/.stderr")
            // Page 4 is in flight and pages 1-3 are stored: then the signal.
            while !server.requests.contains(where: { $0.parameter("page") == "4" }) {
                try await Task.sleep(for: .milliseconds(10))
            }
            while (try? await sqlite(database, "SELECT count(*) FROM t_event")) != "150\n" {
                try await Task.sleep(for: .milliseconds(10))
            }
            kill(run.pid, signal)
            #expect(await run.ending() == .exited(status))
            #expect(try String(contentsOfFile: folder + "/.stdout", encoding: .utf8) == "events: INTERRUPTED: job 'events': interrupted at page 4; pages 1-3 kept\n")
            #expect(try await sqlite(database, "SELECT result, stop_reason, pages, records_new FROM _mirror_runs") == "interrupted|interrupted|3|150\n")
            #expect(try await sqlite(database, "SELECT state, next_page, position FROM _mirror_walks") == "interrupted|4|150\n")
            #expect(try await sqlite(database, "PRAGMA integrity_check") == "ok\n")
            let report = try JSONDecoder.snakeCase.decode(RunReport.self, from: Data(contentsOf: URL(fileURLWithPath: folder + "/report.json")))
            #expect(report.exitStatus == Int(status))
            #expect(report.jobs.map(\.status) == [.interrupted])
            #expect(report.jobs.map(\.complete) == [false])

            // The lock was released; the next run resumes at page 4.
            gate.open()
            let rerun = try await mirror(["run", "jobs.yaml"], in: folder)
            #expect(rerun.status == 0)
            #expect(rerun.stdout.contains("events: ok, 3 pages, 100 records (100 new, 0 updated, 0 unchanged), resumed at page 4, "))
        }
        let ids = try await sqlite(folder + "/out/t_event.sqlite", "SELECT id FROM t_event ORDER BY position")
        #expect(ids == heldPageIDs.joined().map { $0 + "\n" }.joined())
    }

    @Test("SIGINT stops verify: the requests in flight are cancelled, the walk is reported as far as it went, JUnit written, exit 130")
    func verify() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let gate = SlowGate()
        try await withHeldPage(4, gate: gate, jobsIn: folder) { server in
            let run = try Child(mirrorBinary.path, ["verify", "jobs.yaml", "--junit", "junit.xml"], in: folder,
                                environment: ProcessInfo.processInfo.environment, stdout: folder + "/.stdout",
                                stderr: folder + "/.stderr")
            while !server.requests.contains(where: { $0.parameter("page") == "4" }) {
                try await Task.sleep(for: .milliseconds(10))
            }
            kill(run.pid, SIGINT)
            #expect(await run.ending() == .exited(130))
            gate.open()
            let lines = try String(contentsOfFile: folder + "/.stdout", encoding: .utf8).split(separator: "\n")
            #expect(lines.count == 2)
            #expect(lines.first?.hasPrefix("events: 1 fault, 3 pages, 150 records, ended: interrupted, ") == true, "\(lines)")
            #expect(lines.last == "  job 'events': interrupted at page 4; pages 1-3 walked")
            let junit = try String(contentsOfFile: folder + "/junit.xml", encoding: .utf8)
            #expect(junit.contains(#"<failure type="page walk" message="1 page-walk fault: job 'events': interrupted at page 4; pages 1-3 walked">"#),
                    "\(junit)")
        }
    }

    @Test("--max-time stops the run as a signal would: interrupted, exit 1, recorded as such, and the next run walks on")
    func maxTime() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let gate = SlowGate()
        try await withHeldPage(1, gate: gate, jobsIn: folder) { _ in
            // Page 1 is held with an hour's timeout: --max-time ends the run, however long the
            // machine takes to get there, and finds it in the same place. (Pages kept before the
            // limit: the library's own test, on a clock it moves.)
            let stopped = try await mirror(["run", "jobs.yaml", "--max-time", "2s", "--report", "report.json"], in: folder)
            #expect(stopped.status == 1)
            #expect(stopped.stdout == "events: INTERRUPTED: job 'events': interrupted at page 1; nothing stored\n")
            #expect(stopped.stderr.hasSuffix("error: --max-time 2s reached: the run stopped; the next run resumes where it did\n"))
            let report = try JSONDecoder.snakeCase.decode(RunReport.self, from: Data(contentsOf: URL(fileURLWithPath: folder + "/report.json")))
            #expect(report.exitStatus == 1)
            #expect(report.jobs.map(\.status) == [.interrupted])
            #expect(try await sqlite(folder + "/out/t_event.sqlite", "SELECT result, stop_reason FROM _mirror_runs") == "interrupted|interrupted\n")
            let walks = try await sqlite(folder + "/out/t_event.sqlite", "SELECT state, next_page FROM _mirror_walks")
            // Nothing stored: no page to resume at.
            #expect(walks == "interrupted|\n")
            gate.open()
            let rerun = try await mirror(["run", "jobs.yaml"], in: folder)
            #expect(rerun.status == 0)
            #expect(rerun.stdout.hasPrefix("events: ok, 6 pages, 250 records (250 new, 0 updated, 0 unchanged), "), "\(rerun.stdout)")
        }
        let ids = try await sqlite(folder + "/out/t_event.sqlite", "SELECT id FROM t_event ORDER BY position")
        #expect(ids == heldPageIDs.joined().map { $0 + "\n" }.joined())
        let bad = try await mirror(["run", "jobs.yaml", "--max-time", "soon"], in: folder)
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("--max-time must be a duration such as 30m or 2h, not 'soon'"))
    }
}

extension JSONDecoder {
    static var snakeCase: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }
}
