import Foundation
import GRDB
@testable import MirrorCore
@testable import MirrorModel
@testable import MirrorStore
import MirrorTestSupport
import Testing

private let yaml = """
    version: 1
    jobs:
      - name: items
        url: "BASE/items?page={page}"
        records: data.list
        id: id
        table: t_item
        concurrency: 1
    """

private let api = PagedAPI(ids: [["1", "2"], ["3"], ["4", "5"], ["6"]])

/// Serves `api`; page `limited` answers 429 with `Retry-After: 3600` the first `times` times.
private func serve(limited: Int, times: Int = 1) -> @Sendable (FixtureRequest) async -> FixtureResponse {
    let refusals = SharedCounter()
    return { request in
        let page = Int(request.parameter("page") ?? "") ?? 0
        if page == limited, refusals.value < times {
            refusals.increment()
            return FixtureResponse(status: 429, headers: [("Retry-After", "3600")], body: Array("slow down".utf8))
        }
        return .json(api.body(page: page))
    }
}

@Suite("deferral", .timeLimit(.minutes(6)))
struct DeferralTests {
    @Test("a Retry-After longer than max_wait ends the job deferred with what it stored; a run before the resume time walks nothing; the first after it resumes at that page")
    func deferredAndResumed() async throws {
        let harness = try Harness()
        let time = ManualClock()
        let until = Timestamp.string(Date(timeIntervalSince1970: (time.date.timeIntervalSince1970 + 3600).rounded(.up)))
        try await FixtureServer.with(serve(limited: 3)) { server in
            let first = try await harness.run(yaml, server: server, clock: time.clock)
            #expect(server.requests.map(\.target) == ["/items?page=1", "/items?page=2", "/items?page=3"])
            #expect(first.jobs.map(\.error) == ["job 'items': GET \(server.base)/items?page=3: HTTP 429: Retry-After asks to "
                + "wait 1h, longer than max_wait 5m; deferred until \(until): page 3 not stored, pages 1-2 kept"])
            let outcome = first.jobs[0]
            #expect(outcome.status == .deferred && outcome.resumeAfter == until && !outcome.complete)
            #expect(outcome.stopReason == "deferred" && outcome.pages.total == 2 && outcome.records.new == 3)
            #expect(first.jobs.map(\.status) == [.deferred] && !first.timedOut && first.signal == nil)
            #expect(try harness.ids() == ["1", "2", "3"])
            try await harness.database("t_item.sqlite").read { (db) throws in
                let run = try #require(try Row.fetchOne(db, sql: """
                    SELECT result, resume_after, stop_reason, pages, records_new, error, json_extract(outcome, '$.status') AS status,
                      json_extract(outcome, '$.resume_after') AS outcome_resume FROM _mirror_runs
                    """))
                let texts: [String?] = ["result", "resume_after", "stop_reason", "status", "outcome_resume", "error"].map { run[$0] }
                #expect(texts == ["deferred", until, "deferred", "deferred", until, outcome.error])
                let counts: [Int?] = [run["pages"], run["records_new"]]
                #expect(counts == [2, 3])
                let walk = try #require(try Row.fetchOne(db, sql: "SELECT state, resume_after, next_page FROM _mirror_walks"))
                let state: [String?] = [walk["state"], walk["resume_after"]]
                let nextPage: Int? = walk["next_page"]
                #expect(state == ["deferred", until] && nextPage == 3)
            }
            let status = try StatusReader.read(folder: harness.output)
            #expect(status.jobs.map { $0.lastRun?.status } == [.deferred] && status.jobs.map(\.stale) == [true])
            #expect(status.jobs.map(\.lastRun) == [outcome])

            // Before the time the API named: nothing is asked of it.
            let early = try await harness.run(yaml, server: server, clock: time.clock)
            #expect(server.requests.count == 3)
            #expect(early.jobs.map(\.error) == ["job 'items': not walked: an earlier run deferred it until \(until), "
                + "as the API asked; the first run after then resumes at page 3"])
            #expect(early.jobs[0].resumeAfter == until && early.jobs.map(\.status) == [.deferred])

            // After it: the walk resumes where it stopped.
            time.advance(by: .seconds(3601))
            let later = try await harness.run(yaml, server: server, clock: time.clock)
            #expect(server.requests.map(\.target).suffix(3) == ["/items?page=3", "/items?page=4", "/items?page=5"])
            #expect(later.jobs[0].status == .ok && later.jobs[0].resumedAt == 3 && later.jobs[0].records.new == 3)
            #expect(later.jobs[0].resumeAfter == nil && later.allSucceeded)
        }
        #expect(try harness.ids() == ["1", "2", "3", "4", "5", "6"])
        try await harness.database("t_item.sqlite").read { (db) throws in
            let runs = try String.fetchAll(db, sql: "SELECT result || ' ' || coalesce(resume_after, '-') FROM _mirror_runs ORDER BY run_id")
            let deferred = "deferred \(until)"
            #expect(runs == [deferred, deferred, "ok -"])
            #expect(try Row.fetchOne(db, sql: "SELECT state, resume_after FROM _mirror_walks")?.description
                == #"[state:"complete" resume_after:NULL]"#)
            #expect(try Int.fetchAll(db, sql: "SELECT position FROM t_item ORDER BY position") == [0, 1, 2, 3, 4, 5])
        }
    }

    @Test("a deferred job is not failed: it turns stale only once no run has succeeded for a day")
    func deferredIsNotFailed() async throws {
        let harness = try Harness()
        let limited = SharedCounter()
        let file = try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            if page == 2, limited.value > 0 {
                return FixtureResponse(status: 429, headers: [("Retry-After", "3600")], body: [])
            }
            return .json(api.body(page: page))
        }) { server in
            #expect(try await harness.run(yaml, server: server).allSucceeded)
            limited.increment()
            // The next walk starts over, and is deferred at page 2.
            let deferred = try await harness.run(yaml, server: server)
            #expect(deferred.jobs.map(\.status) == [.deferred])
            return try harness.load(yaml, server: server)
        }
        let now = Date()
        let status = try StatusReader.read(folder: harness.output, jobFiles: [file], now: now)
        #expect(status.jobs.map { $0.lastRun?.status } == [.deferred] && status.jobs.map(\.stale) == [false])
        #expect(status.jobs[0].lastSuccess != nil && status.jobs[0].lastRun?.resumeAfter != nil)
        let later = try StatusReader.read(folder: harness.output, jobFiles: [file], now: now.addingTimeInterval(86_401))
        #expect(later.jobs.map(\.stale) == [true])
    }

    @Test("a child job whose parents' walks are deferred keeps them queued and ends deferred")
    func childDeferred() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            if request.path == "/events" { return .json(#"{"data":[{"id":"1"},{"id":"2"}]}"#) }
            if request.path == "/events/2/comments" {
                return FixtureResponse(status: 503, headers: [("Retry-After", "7200")], body: [])
            }
            return .json(#"{"comments":[{"id":"c\#(request.path.split(separator: "/")[1])"}]}"#)
        }) { server in
            try await harness.run("""
                version: 1
                jobs:
                  - { name: events, url: "BASE/events", records: data, id: id, table: t_event }
                  - { name: comments, parent: events, url: "BASE/events/{parent.id}/comments", records: comments, id: id,
                      table: t_comment, concurrency: 1 }
                """, server: server)
        }
        let comments = try #require(summary.jobs.first { $0.job == "comments" })
        #expect(comments.status == .deferred && summary.jobs.allSatisfy { $0.status == .ok || $0.status == .deferred })
        #expect(comments.error?.hasPrefix("1 of 2 parents deferred until \(comments.resumeAfter ?? "?") at the latest "
            + "(walked by the first run after then); first: job 'comments': GET ") == true)
        #expect(comments.error?.hasSuffix(": HTTP 503: Retry-After asks to wait 2h, longer than max_wait 5m; deferred until "
            + "\(comments.resumeAfter ?? "?"): page 1 not stored, nothing stored") == true)
        #expect(try harness.ids("t_comment") == ["c1"])
        try await harness.database("t_event.sqlite").read { (db) throws in
            #expect(try String.fetchAll(db, sql: "SELECT parent_id || ' ' || state FROM _mirror_parents") == ["2 pending"])
        }
    }

    @Test("a download whose wait would be longer than max_wait is not made: it fails as any download does, and its job does not")
    func downloadDeferred() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            if request.path == "/f/1.jpg" {
                return FixtureResponse(status: 429, headers: [("Retry-After", "3600")], body: Array("slow down".utf8))
            }
            return .json(#"{"data":{"list":[{"id":"1","cover":"\#(request.base)/f/1.jpg"}]}}"#)
        }) { server in
            try await harness.run(itemsJob("downloads: [cover]", url: "BASE/items"), server: server)
        }
        let outcome = summary.jobs[0]
        #expect(outcome.status == .ok && summary.allSucceeded)
        #expect(outcome.files?.failed.map(\.error) == ["Retry-After asks to wait 1h, longer than max_wait 5m"])
        try await harness.database("t_item.sqlite").read { (db) throws in
            #expect(try String.fetchAll(db, sql: "SELECT status || ' ' || http_status || ' ' || error FROM _mirror_files")
                == ["failed 429 Retry-After asks to wait 1h, longer than max_wait 5m"])
        }
    }
}
