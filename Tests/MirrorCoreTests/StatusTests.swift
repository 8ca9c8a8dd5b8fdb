import Foundation
@testable import MirrorModel
@testable import MirrorStore
import MirrorTestSupport
import Testing

@Suite("status", .timeLimit(.minutes(6)))
struct StatusTests {
    @Test("each job's last run and result; stale when no run succeeded within a day, or never ran")
    func lastRunsAndStaleness() async throws {
        let harness = try Harness()
        let yaml = """
            version: 1
            defaults: { records: data.list, id: id, share_table: true }
            jobs:
              - { name: good, url: "BASE/good", table: t_item }
              - { name: bad, url: "BASE/bad", table: t_item, retries: 0 }
              - { name: never, url: "BASE/never", table: t_never }
            """
        let file = try await FixtureServer.with({ request in
            request.path == "/bad" ? .text("down", status: 503) : .json(#"{"data":{"list":[{"id":"1"},{"id":"2"}]}}"#)
        }) { server in
            _ = try await harness.run(yaml, server: server, jobs: ["good", "bad"])
            return try harness.load(yaml, server: server)
        }
        let now = Date()
        let fresh = try StatusReader.read(folder: harness.output, jobFiles: [file], now: now)
        #expect(fresh.tables.map { "\($0.table) \($0.records) \($0.accounts)" } == ["t_item 2 1"])
        #expect(fresh.jobs.map(\.job) == ["bad", "good", "never"])
        #expect(fresh.jobs.map { $0.lastRun?.status } == [.failed, .ok, nil])
        #expect(fresh.jobs.map(\.stale) == [true, false, true])
        #expect(fresh.jobs[1].lastRun?.records.new == 2)
        #expect(fresh.jobs[0].lastRun?.error
            == "job 'bad': GET \(file.jobs[1].url.redacted): HTTP 503: unexpected status (service unavailable): down; page 1 not stored, nothing stored")
        // A day later the successful job is stale too.
        let later = try StatusReader.read(folder: harness.output, jobFiles: [file], now: now.addingTimeInterval(86_401))
        #expect(later.jobs.map(\.stale) == [true, true, true])
        #expect(later.jobs.last?.job == "never" && later.jobs.last?.lastRun == nil)
    }

    @Test("status shows a job's last run as the very outcome the run reported, read back from _mirror_runs")
    func lastRunIsTheReportedOutcome() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            request.parameter("page") == "1" ? .json(#"{"data":{"list":[{"id":"1"},{"id":"2"}]}}"#) : .json(#"{"data":{"list":[]}}"#)
        }) { server in
            try await harness.run(itemsJob(), server: server)
        }
        let outcome = try #require(summary.jobs.first)
        #expect(outcome.records.new == 2 && outcome.pages.total == 2 && outcome.stopReason == "empty page 2")
        #expect(try StatusReader.read(folder: harness.output).jobs.map(\.lastRun) == [outcome])
    }
}
