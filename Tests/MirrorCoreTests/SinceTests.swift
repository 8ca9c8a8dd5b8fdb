import Foundation
import GRDB
import Logging
@testable import MirrorCore
@testable import MirrorHTTP
@testable import MirrorJobFile
@testable import MirrorJSON
@testable import MirrorModel
@testable import MirrorStore
import MirrorTestSupport
import Synchronization
import Testing

/// An API of events that answers `?updated_since=T&page=N` (or `?since_id=N`) with the
/// events changed at or after T (with an id above N), oldest first, two a page.
final class ChangesAPI: Sendable {
    struct Event: Sendable {
        var id: String
        var updated: String
        var title: String
        var deleted = false
        var status = "live"
    }

    let events: Mutex<[Event]>

    init(_ events: [Event]) {
        self.events = Mutex(events)
    }

    func change(_ body: @Sendable (inout [Event]) -> Void) {
        events.withLock { body(&$0) }
    }

    static func json(_ event: Event) -> String {
        #"{"id":\#(event.id),"updated_at":"\#(event.updated)","title":"\#(event.title)","deleted":\#(event.deleted),"status":"\#(event.status)"}"#
    }

    var handler: @Sendable (FixtureRequest) async -> FixtureResponse {
        { request in
            let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
            let page = body?["page"] as? Int ?? Int(request.parameter("page") ?? "1") ?? 1
            var chosen = self.events.withLock { $0 }
            if let since = request.parameter("updated_since"), !since.isEmpty {
                chosen = chosen.filter { $0.updated >= since }.sorted { $0.updated < $1.updated }
            }
            var sinceID = request.parameter("since_id")
            if let number = body?["since_id"] as? Int {
                sinceID = String(number)
            }
            if let sinceID, let floor = Int(sinceID) {
                chosen = chosen.filter { Int($0.id)! > floor }.sorted { Int($0.id)! < Int($1.id)! }
            }
            let slice = chosen.dropFirst((page - 1) * 2).prefix(2)
            return .json(#"{"data":{"list":[\#(slice.map(Self.json).joined(separator: ","))]}}"#)
        }
    }
}

/// One request at a time, so that the order of requests is the order of pages.
private func eventsJob(_ keys: String, url: String = "BASE/events?updated_since={since}&page={page}") -> String {
    itemsJob("concurrency: 1\n" + keys, url: url)
}

@Suite("incremental walks and deleted records", .timeLimit(.minutes(6)))
struct SinceTests {
    @Test("a since-time API across three runs: each run asks from the newest updated_at stored, and gets only what changed")
    func sinceTime() async throws {
        let harness = try Harness()
        let api = ChangesAPI([
            .init(id: "1", updated: "2024-01-01T10:00:00Z", title: "a"),
            .init(id: "2", updated: "2024-01-02T10:00:00Z", title: "b"),
            .init(id: "3", updated: "2024-01-03T10:00:00Z", title: "c"),
        ])
        let job = eventsJob(#"incremental: { path: updated_at, initial: "2024-01-01T00:00:00Z" }"#)
        try await FixtureServer.with(api.handler) { server in
            let first = try await harness.run(job, server: server)
            #expect(first.jobs[0].records == .init(new: 3, updated: 0, unchanged: 0, rejected: 0, pruned: 0, deleted: 0))
            #expect(first.jobs[0].since == "2024-01-01T00:00:00Z")
            api.change { events in
                events[1].updated = "2024-01-04T10:00:00Z"
                events[1].title = "b2"
                events.append(.init(id: "4", updated: "2024-01-05T10:00:00Z", title: "d"))
            }
            let second = try await harness.run(job, server: server)
            #expect(second.jobs[0].since == "2024-01-03T10:00:00Z")
            #expect(second.jobs[0].records == .init(new: 1, updated: 1, unchanged: 1, rejected: 0, pruned: 0, deleted: 0))
            let third = try await harness.run(job, server: server)
            #expect(third.jobs[0].since == "2024-01-05T10:00:00Z")
            #expect(third.jobs[0].records == .init(new: 0, updated: 0, unchanged: 1, rejected: 0, pruned: 0, deleted: 0))
            // Each walk ends on its first empty page.
            #expect(server.requests.map(\.target) == [1, 2, 3].map { "/events?updated_since=2024-01-01T00%3A00%3A00Z&page=\($0)" }
                + [1, 2, 3].map { "/events?updated_since=2024-01-03T10%3A00%3A00Z&page=\($0)" }
                + [1, 2].map { "/events?updated_since=2024-01-05T10%3A00%3A00Z&page=\($0)" })
        }
        #expect(try harness.ids().sorted() == ["1", "2", "3", "4"])
        #expect(try harness.record("2") == ChangesAPI.json(.init(id: "2", updated: "2024-01-04T10:00:00Z", title: "b2")))
        let status = try StatusReader.read(folder: harness.output)
        #expect(status.jobs[0].since == "2024-01-05T10:00:00Z")
        #expect(status.jobs[0].highWater == "2024-01-05T10:00:00Z")
        #expect(status.jobs[0].highWaterPath == "updated_at")
    }

    @Test("known: since ends a newest-first feed at the page that reaches {since}; known: record stops before an edited record's page")
    func knownSince() async throws {
        // A data feed: every record, newest updated_at first, two a page; `updated_since` ignored.
        let api = ChangesAPI([
            .init(id: "1", updated: "2024-01-01T10:00:00Z", title: "a"),
            .init(id: "2", updated: "2024-01-02T10:00:00Z", title: "b"),
            .init(id: "3", updated: "2024-01-03T10:00:00Z", title: "c"),
            .init(id: "4", updated: "2024-01-04T10:00:00Z", title: "d"),
            .init(id: "5", updated: "2024-01-05T10:00:00Z", title: "e"),
        ])
        let feed: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
            let page = Int(request.parameter("page") ?? "1") ?? 1
            let events = api.events.withLock { $0 }.sorted { $0.updated > $1.updated }
            let slice = events.dropFirst((page - 1) * 2).prefix(2)
            return .json(#"{"data":{"list":[\#(slice.map(ChangesAPI.json).joined(separator: ","))]}}"#)
        }
        let url = "BASE/feed?hint={since}&page={page}"
        for known in ["since", "record"] {
            let harness = try Harness()
            api.change { events in
                events[0].updated = "2024-01-01T10:00:00Z"
                events[1].updated = "2024-01-02T10:00:00Z"
                events.removeAll { $0.id == "6" }
            }
            let job = eventsJob("incremental: updated_at\nstop: { known: \(known) }", url: url)
            try await FixtureServer.with(feed) { server in
                let first = try await harness.run(job, server: server)
                #expect(first.jobs[0].records.new == 5)
                #expect(first.jobs[0].stopReason == StopReason.emptyPage(page: 4).description)
                // Records 1 and 2 are edited (they move to page 1) and record 6 is new: the
                // feed is now 2, 1 | 6, 5 | 4, 3.
                api.change { events in
                    events[0].updated = "2024-01-07T10:00:00Z"
                    events[1].updated = "2024-01-08T10:00:00Z"
                    events.append(.init(id: "6", updated: "2024-01-06T10:00:00Z", title: "f"))
                }
                let second = try await harness.run(job, server: server)
                let asked = server.requests.dropFirst(4).map(\.target)
                if known == "since" {
                    // Page 2's oldest value (05) is at {since} (05): the last page walked.
                    #expect(asked == ["/feed?hint=2024-01-05T10%3A00%3A00Z&page=1", "/feed?hint=2024-01-05T10%3A00%3A00Z&page=2"])
                    #expect(second.jobs[0].stopReason == "page 2 reached {since}")
                    #expect(second.jobs[0].records == .init(new: 1, updated: 2, unchanged: 1, rejected: 0, pruned: 0, deleted: 0))
                    #expect(try harness.ids().sorted() == ["1", "2", "3", "4", "5", "6"])
                } else {
                    // Page 1 holds records stored before: the walk ends there, and record 6, new
                    // on page 2, is missed.
                    #expect(asked == ["/feed?hint=2024-01-05T10%3A00%3A00Z&page=1"])
                    #expect(second.jobs[0].stopReason == StopReason.knownRecord(page: 1).description)
                    #expect(try harness.record("6") == nil)
                }
            }
        }
    }

    @Test("known: since needs incremental by a record path: a config error otherwise")
    func knownSinceNeedsPath() async throws {
        let harness = try Harness()
        do {
            _ = try harness.load(itemsJob("stop: { known: since }", url: "https://api.example.com/items?page={page}"))
            Issue.record("the job file loaded")
        } catch {
            #expect("\(error)" == "\(harness.folder)/jobs.yaml:9:11: 'stop.known: since' of job 'items' compares each page's "
                + "records with {since}: it needs 'incremental' with a record path (such as updated_at)")
        }
    }

    @Test("lookback moves {since} back; the records seen again are deduplicated, not stored twice")
    func lookback() async throws {
        let harness = try Harness()
        let api = ChangesAPI([
            .init(id: "1", updated: "2024-01-01T10:00:00.250+02:00", title: "a"),
            .init(id: "2", updated: "2024-01-01T10:05:00.500+02:00", title: "b"),
        ])
        let job = eventsJob("incremental: { path: updated_at, lookback: 10m }")
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(job, server: server)
            let second = try await harness.run(job, server: server)
            // 10:05:00.500+02:00 is 08:05:00.500Z; ten minutes before it, 07:55:00.500Z.
            #expect(second.jobs[0].since == "2024-01-01T07:55:00.500Z")
            #expect(second.jobs[0].records == .init(new: 0, updated: 0, unchanged: 2, rejected: 0, pruned: 0, deleted: 0))
            // No initial value: the first walk asks for everything.
            #expect(server.requests.map(\.target).prefix(2) == ["/events?page=1", "/events?page=2"])
        }
        #expect(try harness.ids().sorted() == ["1", "2"])
    }

    @Test("a since-id API compares ids as integers: 10 is above 9")
    func sinceID() async throws {
        let harness = try Harness()
        let api = ChangesAPI((7...10).map { .init(id: "\($0)", updated: "2024-01-01T00:00:00Z", title: "e\($0)") })
        let job = eventsJob("incremental: { path: id, initial: 6 }", url: "BASE/events?since_id={since}&page={page}")
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(job, server: server)
            api.change { $0.append(.init(id: "11", updated: "2024-01-01T00:00:00Z", title: "e11")) }
            let second = try await harness.run(job, server: server)
            #expect(second.jobs[0].since == "10")
            #expect(second.jobs[0].records.new == 1)
            #expect(server.requests.map(\.target) == [
                "/events?since_id=6&page=1", "/events?since_id=6&page=2", "/events?since_id=6&page=3",
                "/events?since_id=10&page=1", "/events?since_id=10&page=2",
            ])
        }
        #expect(try harness.ids().sorted { Int($0)! < Int($1)! } == ["7", "8", "9", "10", "11"])
    }

    @Test("{since} alone in a POST body is sent as the number the records hold, and left out before there is one")
    func sinceInBody() async throws {
        let harness = try Harness()
        let api = ChangesAPI((1...3).map { .init(id: "\($0)", updated: "2024-01-01T00:00:00Z", title: "e\($0)") })
        let job = eventsJob("""
            method: POST
            body: { since_id: "{since}", page: "{page}", note: "after {since}" }
            incremental: id
            pages: { from: 1, to: 2 }
            """, url: "BASE/events")
        try await FixtureServer.with(api.handler) { server in
            let first = try await harness.run(job, server: server)
            #expect(first.jobs[0].error == nil)
            _ = try await harness.run(job, server: server)
            #expect(server.requests.map { String(decoding: $0.body, as: UTF8.self) } == [
                #"{"page":1,"note":"after "}"#, #"{"page":2,"note":"after "}"#,
                // Nothing after 3: the empty page ends the walk.
                #"{"since_id":3,"page":1,"note":"after 3"}"#,
            ])
        }
    }

    @Test("from: last_run takes the start of the last complete walk, to the second; --refresh starts from initial")
    func lastRun() async throws {
        let harness = try Harness()
        let api = ChangesAPI([.init(id: "1", updated: "2024-01-01T00:00:00Z", title: "a")])
        let job = eventsJob(#"incremental: { from: last_run, initial: "2000-01-01T00:00:00Z" }"#)
        try await FixtureServer.with(api.handler) { server in
            let first = try await harness.run(job, server: server)
            let second = try await harness.run(job, server: server)
            #expect(second.jobs[0].since == String(first.jobs[0].startedAt.prefix(19)) + "Z")
            let refreshed = try await harness.run(job, server: server, refresh: true)
            #expect(refreshed.jobs[0].since == "2000-01-01T00:00:00Z")
            #expect(server.requests.map { $0.parameter("updated_since") } == [
                "2000-01-01T00:00:00Z", "2000-01-01T00:00:00Z", String(first.jobs[0].startedAt.prefix(19)) + "Z",
                "2000-01-01T00:00:00Z", "2000-01-01T00:00:00Z",
            ])
        }
    }

    @Test("a walk that fails half-way resumes with the {since} it started with")
    func resumeKeepsSince() async throws {
        let harness = try Harness()
        let api = ChangesAPI((1...4).map { .init(id: "\($0)", updated: "2024-01-0\($0)T00:00:00Z", title: "e\($0)") })
        let failing = Atomic(true)
        let job = eventsJob(#"incremental: { path: updated_at, initial: "2024-01-01T00:00:00Z" }"# + "\nretries: 0")
        try await FixtureServer.with({ request in
            if request.parameter("page") == "2", failing.load(ordering: .relaxed) { return .text("down", status: 500) }
            return await api.handler(request)
        }) { server in
            let first = try await harness.run(job, server: server)
            #expect(first.jobs[0].status == .failed)
            failing.store(false, ordering: .relaxed)
            let second = try await harness.run(job, server: server)
            #expect(second.jobs[0].status == .ok)
            #expect(second.jobs[0].since == "2024-01-01T00:00:00Z")
            #expect(second.jobs[0].resumedAt == 2)
            let third = try await harness.run(job, server: server)
            #expect(third.jobs[0].since == "2024-01-04T00:00:00Z")
        }
        #expect(try harness.ids().sorted() == ["1", "2", "3", "4"])
    }

    @Test("an incremental path added to a job with stored records starts from the highest of them")
    func pathFromStoredRecords() async throws {
        let harness = try Harness()
        let api = ChangesAPI([
            .init(id: "1", updated: "2024-03-01T00:00:00Z", title: "a"),
            .init(id: "2", updated: "2024-02-01T00:00:00Z", title: "b"),
        ])
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(itemsJob("pages: { from: 1, to: 1 }", url: "BASE/events?page={page}"), server: server)
            let second = try await harness.run(eventsJob("incremental: updated_at\npages: { from: 1, to: 1 }"), server: server)
            #expect(second.jobs[0].since == "2024-03-01T00:00:00Z")
        }
    }

    @Test("records marked deleted are removed and counted; deleted: {path, equals} matches a value")
    func deletions() async throws {
        let harness = try Harness()
        let api = ChangesAPI((1...3).map { .init(id: "\($0)", updated: "2024-01-0\($0)T00:00:00Z", title: "e\($0)") })
        try await FixtureServer.with(api.handler) { server in
            let job = eventsJob("deleted: deleted\nincremental: updated_at")
            _ = try await harness.run(job, server: server)
            api.change { events in
                events[0].deleted = true
                events[0].updated = "2024-01-09T00:00:00Z"
                events.append(.init(id: "9", updated: "2024-01-10T00:00:00Z", title: "gone", deleted: true))
            }
            let second = try await harness.run(job, server: server)
            #expect(second.jobs[0].records == .init(new: 0, updated: 0, unchanged: 1, rejected: 0, pruned: 0, deleted: 1))
            #expect(second.jobs[0].since == "2024-01-03T00:00:00Z")
            #expect(try harness.ids().sorted() == ["2", "3"])
            let third = try await harness.run(job, server: server)
            // The deleted records still count for {since}: they are the newest changes.
            #expect(third.jobs[0].since == "2024-01-10T00:00:00Z")
            let recorded = try await harness.database("t_item.sqlite").read { db in
                try Int.fetchAll(db, sql: "SELECT records_deleted FROM _mirror_runs ORDER BY run_id")
            }
            #expect(recorded == [0, 1, 0])

            api.change { $0[1].status = "removed" }
            let valued = try await harness.run(eventsJob(#"deleted: { path: status, equals: "removed" }"#
                + "\nincremental: updated_at"), server: server, refresh: true)
            #expect(valued.jobs[0].records.deleted == 1)
        }
        // That job's rule is another: records 1 and 9, marked only by `deleted: true`, are stored again.
        #expect(try harness.ids().sorted() == ["1", "3", "9"])
    }

    @Test("a walk cut by --max-pages does not move {since}: the next walk still asks for what it did not see")
    func cutWalkKeepsSince() async throws {
        let harness = try Harness()
        let api = ChangesAPI((1...4).map { .init(id: "\($0)", updated: "2024-01-0\($0)T00:00:00Z", title: "e\($0)") })
        let job = eventsJob(#"incremental: { path: updated_at, initial: "2024-01-01T00:00:00Z" }"#)
        try await FixtureServer.with(api.handler) { server in
            let cut = try await harness.run(job, server: server, maxPages: 1)
            #expect(cut.jobs[0].stopReason == "--max-pages 1 reached")
            let whole = try await harness.run(job, server: server)
            #expect(whole.jobs[0].since == "2024-01-01T00:00:00Z")
            let next = try await harness.run(job, server: server)
            #expect(next.jobs[0].since == "2024-01-04T00:00:00Z")
        }
        // Only the last walk's pages are kept: no walk asks for an earlier {since} again.
        let pages = try await harness.database("t_item.sqlite").read { db in
            try String.fetchAll(db, sql: "SELECT url FROM _mirror_pages ORDER BY page")
        }
        #expect(pages.allSatisfy { $0.contains("updated_since=2024-01-04T00%3A00%3A00Z") })
        // Its page, and the empty page that ended it (kept for `mirror serve`).
        #expect(pages.count == 2)
    }

    @Test("verify walks an incremental job from its initial value")
    func verifyFromInitial() async throws {
        let harness = try Harness()
        let api = ChangesAPI([.init(id: "1", updated: "2024-01-02T00:00:00Z", title: "a")])
        try await FixtureServer.with(api.handler) { server in
            let file = try harness.load(eventsJob(#"incremental: { path: updated_at, initial: "2024-01-01T00:00:00Z" }"#),
                                        server: server)
            let summary = try await Verifier(client: HTTPClient(), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
                .verify([file], options: Verifier.Options())
            #expect(summary.passed)
            #expect(server.requests.map(\.target) == [
                "/events?updated_since=2024-01-01T00%3A00%3A00Z&page=1", "/events?updated_since=2024-01-01T00%3A00%3A00Z&page=2",
            ])
        }
    }

    @Test("deleted marks a record with true, a non-empty string or a non-zero number; never with an object or an array")
    func deletedValues() throws {
        let rule = JobSpec.Deleted(path: JSONPath("gone")!)
        func marks(_ json: String) throws -> Bool { rule.marks(try JSONDocument(parsing: Array(json.utf8)).root) }
        #expect(try [#"{"gone":true}"#, #"{"gone":"yes"}"#, #"{"gone":1}"#, #"{"gone":-0.5}"#].allSatisfy(marks))
        #expect(try ![#"{"gone":false}"#, #"{"gone":""}"#, #"{"gone":0}"#, #"{"gone":0.0}"#, #"{"gone":null}"#,
                      #"{"gone":{}}"#, #"{"gone":[1]}"#, #"{}"#].contains(where: marks))
        let valued = JobSpec.Deleted(path: JSONPath("status")!, equals: "removed")
        #expect(valued.marks(try JSONDocument(parsing: Array(#"{"status":"removed"}"#.utf8)).root))
        #expect(!valued.marks(try JSONDocument(parsing: Array(#"{"status":"live"}"#.utf8)).root))
    }

    @Test("incremental job files are checked before any request")
    func configErrors() {
        func errors(_ keys: String, url: String = "https://x.test/events?updated_since={since}") -> [String] {
            do {
                _ = try JobFileLoader(environment: ["START": "2024-01-01T00:00:00Z"]).parse(text: itemsJob(keys, url: url), path: "x.yaml", folder: ".")
                return []
            } catch {
                return error.diagnostics.map { String($0.description.dropFirst("x.yaml:".count)) }
            }
        }
        #expect(errors("incremental: updated_at\nprune: true") == [
            "10:12: 'prune' cannot go with 'incremental' in job 'items': an incremental walk sees only what changed, "
                + "so every record it did not see would be deleted",
        ])
        #expect(errors("incremental: updated_at", url: "https://x.test/events") == [
            "9:18: 'incremental' of job 'items' needs {since} in its url, body or headers",
        ])
        #expect(errors("") == ["5:10: job 'items' uses {since} but has no 'incremental' saying where it comes from"])
        #expect(errors("incremental: { path: id, initial: 5, lookback: 1h }") == [
            "9:52: 'incremental.lookback' moves times back, but 'incremental.initial' (5) is a number",
        ])
        #expect(errors("incremental: { path: updated_at, initial: \"${START}\" }") == [
            "9:47: 'incremental.initial' is shown in the summary and stored: a variable in it must be listed in 'not_secret'",
        ])
        #expect(errors("incremental: { from: yesterday }", url: "https://x.test/events") == [
            "9:26: 'incremental.from' must be last_run, not 'yesterday'",
        ])
        #expect(errors("deleted: { equals: x }", url: "https://x.test/events") == [
            "9:14: 'deleted' of job 'items' needs 'path', the record path that marks a deleted record",
        ])
    }
}
