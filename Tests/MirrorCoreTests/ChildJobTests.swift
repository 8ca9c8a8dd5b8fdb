import Foundation
import GRDB
import Logging
@testable import MirrorCore
@testable import MirrorHTTP
@testable import MirrorJobFile
@testable import MirrorModel
@testable import MirrorStore
import MirrorTestSupport
import Synchronization
import Testing

/// Events at `/events?page=N` (all on page 1), and each event's comments at
/// `/events/<id>/comments?page=N`, two a page. An event id in `failing` answers 500 for
/// its comments.
final class EventsAPI: Sendable {
    struct Event: Sendable {
        var id: String
        var title: String
        var comments: Int
        var deleted = false
    }

    let events: Mutex<[Event]>
    let failing = Mutex<Set<String>>([])

    init(_ events: [Event]) {
        self.events = Mutex(events)
    }

    func change(_ body: @Sendable (inout [Event]) -> Void) {
        events.withLock { body(&$0) }
    }

    var handler: @Sendable (FixtureRequest) async -> FixtureResponse {
        { request in
            let page = Int(request.parameter("page") ?? "1") ?? 1
            let events = self.events.withLock { $0 }
            if request.path == "/events" {
                let list = page == 1 ? events.map {
                    #"{"id":\#($0.id),"title":"\#($0.title)","deleted":\#($0.deleted),"slug":"e-\#($0.id)"}"#
                } : []
                return .json(#"{"data":{"list":[\#(list.joined(separator: ","))]}}"#)
            }
            let parts = request.path.split(separator: "/")
            guard parts.count == 3, parts[0] == "events", parts[2] == "comments",
                  let event = events.first(where: { $0.id == parts[1] }) else { return .text("no such page", status: 404) }
            if self.failing.withLock({ $0.contains(event.id) }) { return .text("down", status: 500) }
            let all = (1...max(event.comments, 1)).prefix(event.comments).map {
                #"{"id":"c\#(event.id)-\#($0)","text":"\#(event.title) \#($0)"}"#
            }
            let slice = all.dropFirst((page - 1) * 2).prefix(2)
            return .json(#"{"comments":[\#(slice.joined(separator: ","))]}"#)
        }
    }
}

private func familyJobs(_ childKeys: String = "", parentKeys: String = "", child: Bool = true) -> String {
    """
    version: 1
    jobs:
      - name: events
        url: "BASE/events?page={page}"
        records: data.list
        id: id
        table: t_event
        concurrency: 1
    \(parentKeys.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
    """ + (child ? """

      - name: event_comments
        parent: events
        url: "BASE/events/{parent.id}/comments?page={page}"
        records: comments
        id: id
        table: t_comment
        retries: 0
    \(childKeys.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
    """ : "")
}

@Suite("child jobs", .timeLimit(.minutes(6)))
struct ChildJobTests {
    /// `(id, parent_id)` of every stored comment, by id.
    func comments(_ harness: Harness) throws -> [String] {
        try harness.database("t_comment.sqlite").read { db in
            try Row.fetchAll(db, sql: "SELECT id, parent_id FROM t_comment ORDER BY id").map { "\($0["id"] as String)@\($0["parent_id"] as String)" }
        }
    }

    func commentRequests(_ server: FixtureServer) -> [String] {
        server.requests.map(\.target).filter { $0.contains("/comments") }.sorted()
    }

    @Test("a child job walks each parent's paged children and stores them with their parent's id")
    func pagedChildren() async throws {
        let harness = try Harness()
        let api = EventsAPI([.init(id: "1", title: "a", comments: 3), .init(id: "2", title: "b", comments: 1),
                             .init(id: "3", title: "c", comments: 0)])
        try await FixtureServer.with(api.handler) { server in
            let summary = try await harness.run(familyJobs(), server: server)
            #expect(summary.jobs.map(\.status) == [.ok, .ok])
            let child = summary.jobs[1]
            #expect(child.stopReason == "children of 3 parents walked")
            #expect(child.parents == ParentWalks(walked: 3, failed: 0, orphansDeleted: 0))
            #expect(child.records == .init(new: 4, updated: 0, unchanged: 0, rejected: 0, pruned: 0, deleted: 0))
            #expect(commentRequests(server) == [
                "/events/1/comments?page=1", "/events/1/comments?page=2", "/events/1/comments?page=3",
                "/events/2/comments?page=1", "/events/2/comments?page=2", "/events/3/comments?page=1",
            ])
        }
        #expect(try comments(harness) == ["c1-1@1", "c1-2@1", "c1-3@1", "c2-1@2"])
        // A device joins child to parent with SQL alone, through an index.
        let joined = try await harness.database("t_comment.sqlite").read { db in
            try db.execute(sql: "ATTACH DATABASE ? AS events", arguments: [harness.output + "/t_event.sqlite"])
            let plan = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT id FROM t_comment WHERE account = '' AND parent_id = '1'")
                .map { $0["detail"] as String }
            let rows = try String.fetchAll(db, sql: """
                SELECT json_extract(e.record, '$.title') || ': ' || json_extract(c.record, '$.text')
                FROM events.t_event e JOIN t_comment c ON c.account = e.account AND c.parent_id = e.id
                WHERE e.id = '1' ORDER BY c.position
                """)
            return (plan, rows)
        }
        #expect(joined.0.contains { $0.contains("t_comment_by_parent") })
        #expect(joined.1 == ["a: a 1", "a: a 2", "a: a 3"])
    }

    @Test("a child job may store into its parent's database file")
    func sharedDatabase() async throws {
        let harness = try Harness()
        let api = EventsAPI([.init(id: "1", title: "a", comments: 2), .init(id: "2", title: "b", comments: 1)])
        try await FixtureServer.with(api.handler) { server in
            let summary = try await harness.run(familyJobs("database: t_event.sqlite"), server: server)
            #expect(summary.jobs.map(\.status) == [.ok, .ok])
            api.change { $0.removeFirst() }
            let second = try await harness.run(familyJobs("database: t_event.sqlite", parentKeys: "prune: true"), server: server)
            #expect(second.jobs[1].parents == ParentWalks(walked: 0, failed: 0, orphansDeleted: 2))
        }
        let rows = try await harness.database("t_event.sqlite").read { db in
            try Row.fetchAll(db, sql: "SELECT id, parent_id FROM t_comment ORDER BY id").map { "\($0["id"] as String)@\($0["parent_id"] as String)" }
        }
        #expect(rows == ["c2-1@2"])
        #expect(!FileManager.default.fileExists(atPath: harness.output + "/t_comment.sqlite"))
    }

    @Test("the next run walks only the parents that are new or changed; --refresh walks them all")
    func changedParentsOnly() async throws {
        let harness = try Harness()
        let api = EventsAPI([.init(id: "1", title: "a", comments: 1), .init(id: "2", title: "b", comments: 1)])
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(familyJobs(), server: server)
            let firstCount = commentRequests(server).count
            api.change { events in
                events[1].title = "b2"
                events.append(.init(id: "3", title: "c", comments: 2))
            }
            let second = try await harness.run(familyJobs(), server: server)
            #expect(second.jobs[1].parents == ParentWalks(walked: 2, failed: 0, orphansDeleted: 0))
            #expect(commentRequests(server).count == firstCount + 4)
            let third = try await harness.run(familyJobs(), server: server)
            #expect(third.jobs[1].parents == ParentWalks(walked: 0, failed: 0, orphansDeleted: 0))
            #expect(third.jobs[1].stopReason == "children of 0 parents walked")
            let refreshed = try await harness.run(familyJobs(), server: server, refresh: true)
            #expect(refreshed.jobs[1].parents == ParentWalks(walked: 3, failed: 0, orphansDeleted: 0))
            #expect(server.requests.filter { $0.path == "/events/2/comments" }.map(\.target) == [
                "/events/2/comments?page=1", "/events/2/comments?page=2",
                "/events/2/comments?page=1", "/events/2/comments?page=2",
                "/events/2/comments?page=1", "/events/2/comments?page=2",
            ])
            #expect(server.requests.filter { $0.path == "/events/1/comments" }.count == 4)
        }
        #expect(try comments(harness) == ["c1-1@1", "c2-1@2", "c3-1@3", "c3-2@3"])
        #expect(try harness.record("c2-1", table: "t_comment") == #"{"id":"c2-1","text":"b2 1"}"#)
    }

    @Test("a child job added to a parent with stored records walks every one of them first")
    func childAddedLater() async throws {
        let harness = try Harness()
        let api = EventsAPI([.init(id: "1", title: "a", comments: 1), .init(id: "2", title: "b", comments: 1)])
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(familyJobs(child: false), server: server)
            let summary = try await harness.run(familyJobs(), server: server, jobs: ["event_comments"])
            #expect(summary.jobs.map(\.job) == ["event_comments"])
            #expect(summary.jobs[0].parents == ParentWalks(walked: 2, failed: 0, orphansDeleted: 0))
        }
        #expect(try comments(harness) == ["c1-1@1", "c2-1@2"])
    }

    @Test("a parent's file copied before its parents were all queued, beside a child's file copied after: they are queued again")
    func parentsQueuedCut() async throws {
        let harness = try Harness()
        let api = EventsAPI([.init(id: "1", title: "a", comments: 1), .init(id: "2", title: "b", comments: 2)])
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(familyJobs(child: false), server: server)
            // The parent's file as a push copied it, before the child job's first walk queued its parents.
            let parentCopy = harness.folder + "/t_event.copy"
            try DatabaseCopy.write(from: harness.output + "/t_event.sqlite", to: parentCopy)
            // The child's file as a later copy has it: every parent queued and none walked yet.
            api.failing.withLock { $0 = ["1", "2"] }
            _ = try await harness.run(familyJobs(), server: server, jobs: ["event_comments"])
            #expect(try comments(harness) == [])
            // Both copies pulled into one folder.
            for suffix in ["", "-wal", "-shm"] { unlink(harness.output + "/t_event.sqlite" + suffix) }
            #expect(rename(parentCopy, harness.output + "/t_event.sqlite") == 0)
            api.failing.withLock { $0 = [] }
            let summary = try await harness.run(familyJobs(), server: server, jobs: ["event_comments"])
            #expect(summary.jobs[0].parents == ParentWalks(walked: 2, failed: 0, orphansDeleted: 0))
        }
        #expect(try comments(harness) == ["c1-1@1", "c2-1@2", "c2-2@2"])
    }

    @Test("a child's file whose parents an earlier version queued keeps its mark: no parent is walked again")
    func parentsQueuedEarlier() async throws {
        let harness = try Harness()
        let api = EventsAPI([.init(id: "1", title: "a", comments: 1), .init(id: "2", title: "b", comments: 2)])
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(familyJobs(), server: server)
            // The files as an earlier version left them: the mark in the child's file alone.
            try await harness.database("t_event.sqlite").write { try $0.execute(sql: "DELETE FROM _mirror_parents_queued") }
            try await harness.database("t_comment.sqlite").write { db in
                try db.execute(sql: "UPDATE _mirror_walks SET parents_queued_at = '2026-01-01T00:00:00Z', parents_queue_seen = NULL")
            }
            let summary = try await harness.run(familyJobs(), server: server, jobs: ["event_comments"])
            #expect(summary.jobs[0].parents == ParentWalks(walked: 0, failed: 0, orphansDeleted: 0))
        }
        #expect(try comments(harness) == ["c1-1@1", "c2-1@2", "c2-2@2"])
    }

    @Test("a failing child walk fails its job, keeps the other parents' records, and is the only one retried next run")
    func failingChildRetried() async throws {
        let harness = try Harness()
        let api = EventsAPI([.init(id: "1", title: "a", comments: 1), .init(id: "2", title: "b", comments: 3),
                             .init(id: "3", title: "c", comments: 1)])
        api.failing.withLock { $0 = ["2"] }
        try await FixtureServer.with(api.handler) { server in
            let first = try await harness.run(familyJobs(), server: server)
            #expect(first.jobs[0].status == .ok)
            #expect(first.jobs[1].status == .failed)
            #expect(first.jobs[1].parents == ParentWalks(walked: 2, failed: 1, orphansDeleted: 0))
            #expect(first.jobs[1].error == "1 of 3 parents failed (walked again by the next run); first: job 'event_comments': "
                + "GET \(server.base)/events/2/comments?page=1: HTTP 500: unexpected status (internal server error): down; "
                + "page 1 not stored, nothing stored")
            #expect(try comments(harness) == ["c1-1@1", "c3-1@3"])
            let status = try StatusReader.read(folder: harness.output)
            let child = try #require(status.jobs.first { $0.job == "event_comments" })
            #expect(child.parentsPending == 0)
            #expect(child.parentsFailed == 1)
            #expect(child.parentsPending == 0)

            api.failing.withLock { $0 = [] }
            let before = commentRequests(server).count
            let second = try await harness.run(familyJobs(), server: server)
            #expect(second.jobs[1].status == .ok)
            #expect(second.jobs[1].parents == ParentWalks(walked: 1, failed: 0, orphansDeleted: 0))
            #expect(commentRequests(server).count == before + 3)
            #expect(server.requests.suffix(3).map(\.target) == [
                "/events/2/comments?page=1", "/events/2/comments?page=2", "/events/2/comments?page=3",
            ])
        }
        #expect(try comments(harness) == ["c1-1@1", "c2-1@2", "c2-2@2", "c2-3@2", "c3-1@3"])
        let status = try StatusReader.read(folder: harness.output)
        #expect(status.jobs.first { $0.job == "event_comments" }?.parentsFailed == 0)
    }

    @Test("a parent whose children a walk cut by --max-pages did not all see stays queued")
    func cutByMaxPages() async throws {
        let harness = try Harness()
        let api = EventsAPI([.init(id: "1", title: "a", comments: 3), .init(id: "2", title: "b", comments: 0)])
        try await FixtureServer.with(api.handler) { server in
            let cut = try await harness.run(familyJobs(), server: server, maxPages: 1)
            #expect(cut.jobs[1].status == .ok)
            #expect(cut.jobs[1].stopReason == "--max-pages 1 reached")
            #expect(cut.jobs[1].parents == ParentWalks(walked: 1, failed: 0, orphansDeleted: 0))
            let status = try StatusReader.read(folder: harness.output)
            #expect(status.jobs.first { $0.job == "event_comments" }?.parentsPending == 1)
            let whole = try await harness.run(familyJobs(), server: server)
            #expect(whole.jobs[1].parents == ParentWalks(walked: 1, failed: 0, orphansDeleted: 0))
            #expect(server.requests.filter { $0.path == "/events/1/comments" }.map(\.target) == [
                "/events/1/comments?page=1", "/events/1/comments?page=1", "/events/1/comments?page=2",
                "/events/1/comments?page=3",
            ])
        }
        #expect(try comments(harness) == ["c1-1@1", "c1-2@1", "c1-3@1"])
    }

    @Test("a child told apart by a header alone is never answered from another parent's stored page")
    func headerPlaceholder() async throws {
        let harness = try Harness()
        let yaml = """
            version: 1
            jobs:
              - { name: events, url: "BASE/events?page={page}", records: data.list, id: id, table: t_event, concurrency: 1 }
              - name: event_comments
                parent: events
                url: "BASE/comments"
                headers: { X-Event: "{parent.id}" }
                refresh_after: 1h
                records: comments
                id: id
                table: t_comment
            """
        let api = EventsAPI([.init(id: "1", title: "a", comments: 1), .init(id: "2", title: "b", comments: 1)])
        try await FixtureServer.with({ request in
            if request.path == "/comments", let event = request.headers["x-event"] {
                return .json(#"{"comments":[{"id":"c\#(event)-1","text":"x"}]}"#)
            }
            return await api.handler(request)
        }) { server in
            let summary = try await harness.run(yaml, server: server)
            #expect(summary.jobs[1].parents == ParentWalks(walked: 2, failed: 0, orphansDeleted: 0))
            #expect(server.requests.filter { $0.path == "/comments" }.compactMap { $0.headers["x-event"] }.sorted() == ["1", "2"])
        }
        #expect(try comments(harness) == ["c1-1@1", "c2-1@2"])
    }

    @Test("a job that becomes a child walks every stored parent on its first run as one; prune counts as pruned")
    func becomesChild() async throws {
        let harness = try Harness()
        let api = EventsAPI([.init(id: "1", title: "a", comments: 3), .init(id: "2", title: "b", comments: 1)])
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(familyJobs(child: false), server: server)
            // A standalone job of that name ran before.
            _ = try await harness.run("""
                version: 1
                jobs:
                  - { name: event_comments, url: "BASE/events/1/comments?page={page}", records: comments, id: id, table: t_other }
                """, server: server)
            let first = try await harness.run(familyJobs("prune: true"), server: server, jobs: ["event_comments"])
            #expect(first.jobs[0].parents == ParentWalks(walked: 2, failed: 0, orphansDeleted: 0))
            api.change { events in
                events[0].title = "a2"
                events[0].comments = 1
            }
            let second = try await harness.run(familyJobs("prune: true"), server: server)
            #expect(second.jobs[1].parents == ParentWalks(walked: 1, failed: 0, orphansDeleted: 0))
            #expect(second.jobs[1].records.pruned == 2)
            #expect(second.jobs[1].records.deleted == 0)
        }
        #expect(try comments(harness) == ["c1-1@1", "c2-1@2"])
    }

    @Test("child ids that repeat across parents are reported: one row per id, moved to the last parent walked")
    func repeatedChildIDs() async throws {
        let harness = try Harness()
        let api = EventsAPI([.init(id: "1", title: "a", comments: 0), .init(id: "2", title: "b", comments: 0)])
        try await FixtureServer.with({ request in
            // Every event numbers its comments from 1.
            if request.path.hasSuffix("/comments") {
                return .json(request.parameter("page") == "1" ? #"{"comments":[{"id":1,"text":"first"}]}"# : #"{"comments":[]}"#)
            }
            return await api.handler(request)
        }) { server in
            let summary = try await harness.run(familyJobs("concurrency: 1"), server: server)
            #expect(summary.jobs[1].status == .ok)
            #expect(summary.jobs[1].warnings == [
                "1 child id was another parent's, and its row moved: '1' of parent '2' was parent '1''s; "
                    + "child ids must be unique across parents",
            ])
        }
        #expect(try comments(harness) == ["1@2"])
    }

    @Test("a parent deleted or pruned takes its children with it")
    func cascade() async throws {
        let harness = try Harness()
        let api = EventsAPI([.init(id: "1", title: "a", comments: 2), .init(id: "2", title: "b", comments: 1),
                             .init(id: "3", title: "c", comments: 1)])
        let jobs = familyJobs(parentKeys: "deleted: deleted\nprune: true")
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(jobs, server: server)
            api.change { events in
                events[0].deleted = true
                events.remove(at: 2)
            }
            let second = try await harness.run(jobs, server: server)
            #expect(second.jobs[0].records.deleted == 1)
            #expect(second.jobs[0].records.pruned == 1)
            #expect(second.jobs[1].parents == ParentWalks(walked: 0, failed: 0, orphansDeleted: 3))
            #expect(second.jobs[1].records.deleted == 3)
        }
        #expect(try harness.ids("t_event") == ["2"])
        #expect(try comments(harness) == ["c2-1@2"])
    }

    @Test("parents are checked when the file is loaded")
    func configErrors() {
        func errors(_ yaml: String) -> [String] {
            do {
                _ = try JobFileLoader(environment: [:]).parse(text: yaml, path: "x.yaml", folder: ".")
                return []
            } catch {
                return error.diagnostics.map { String($0.description.dropFirst("x.yaml:".count)) }
            }
        }
        func file(_ jobs: String) -> String {
            "version: 1\ndefaults: { records: list, id: id }\njobs:\n" + jobs
        }
        #expect(errors(file("""
              - { name: events, url: "https://x.test/e", table: t_e }
              - { name: comments, parent: evnts, url: "https://x.test/e/{parent.id}", table: t_c }
            """)) == ["5:31: 'parent' of job 'comments' names no job of this file: 'evnts' (did you mean 'events'?)"])
        #expect(errors(file("""
              - { name: a, parent: b, url: "https://x.test/a/{parent.id}", table: t_a }
              - { name: b, parent: a, url: "https://x.test/b/{parent.id}", table: t_b }
            """)) == ["4:24: jobs 'a', 'b' are each other's parents: a cycle (a → b → a)"])
        #expect(errors(file("""
              - { name: a, url: "https://x.test/a/{parent.id}", table: t_a }
            """)) == ["4:21: job 'a' uses {parent.id} but has no 'parent'"])
        #expect(errors(file("""
              - { name: a, url: "https://x.test/a", table: t_a }
              - { name: b, parent: a, url: "https://x.test/b", table: t_b }
            """)) == ["5:24: job 'b' has a parent but no {parent.<path>} in its url, body or headers (such as {parent.id}): "
                + "every parent would give the same request"])
        #expect(errors(file("""
              - { name: a, url: "https://x.test/a", table: t_a }
              - { name: b, parent: b, url: "https://x.test/b/{parent.id}", table: t_b }
            """)) == ["5:24: job 'b' cannot be its own parent"])
        #expect(errors(file("""
              - { name: a, url: "https://x.test/a", table: t_a }
              - { name: b, parent: a, url: "https://x.test/b/{parent.id}", table: t_b, share_table: true }
            """)) == ["5:89: 'share_table' cannot go with 'parent' in job 'b': a child job deletes the records of parents "
                + "that are gone, which in a shared table would be another job's"])
    }

    @Test("a child table's change feed carries each record's parent, and a record that moves to another parent is a change")
    func childFeed() async throws {
        let harness = try Harness()
        let api = EventsAPI([.init(id: "1", title: "a", comments: 2), .init(id: "2", title: "b", comments: 1)])
        try await FixtureServer.with(api.handler) { server in
            // One parent at a time: their children's changes come in parent order.
            _ = try await harness.run(familyJobs("concurrency: 1"), server: server)
            #expect(try harness.changes(since: 0, table: "t_comment").lines.map(\.description) == [
                #"1 upsert /c1-1@1 {"id":"c1-1","text":"a 1"}"#, #"2 upsert /c1-2@1 {"id":"c1-2","text":"a 2"}"#,
                #"3 upsert /c2-1@2 {"id":"c2-1","text":"b 1"}"#,
            ])
            // Event 1 is gone: its comments go with it.
            api.change { $0.removeFirst() }
            _ = try await harness.run(familyJobs("concurrency: 1", parentKeys: "prune: true"), server: server)
            #expect(try harness.changes(since: 3, table: "t_comment").lines.map(\.description)
                == ["4 delete /c1-1", "5 delete /c1-2"])
        }
        // A record whose parent changes, its record the same.
        let store = try TableStore(path: harness.output + "/t_comment.sqlite")
        try await store.pool.write { db in
            try db.execute(sql: "UPDATE t_comment SET parent_id = '9' WHERE id = 'c2-1'")
        }
        #expect(try harness.changes(since: 5, table: "t_comment").lines.map(\.description)
            == [#"6 upsert /c2-1@9 {"id":"c2-1","text":"b 1"}"#])
    }
}

@Suite("verifying child jobs", .timeLimit(.minutes(6)))
struct ChildVerifyTests {
    @Test("verify walks a child job for its parent's first records, and names the parent of each fault")
    func verifyChildren() async throws {
        let harness = try Harness()
        let api = EventsAPI([.init(id: "1", title: "a", comments: 3), .init(id: "2", title: "b", comments: 1),
                             .init(id: "3", title: "c", comments: 1)])
        api.failing.withLock { $0 = ["2"] }
        try await FixtureServer.with(api.handler) { server in
            let file = try harness.load(familyJobs(), server: server)
            func verify(jobs: [String] = [], maxParents: Int? = nil) async throws -> VerifySummary {
                var options = Verifier.Options()
                options.jobs = jobs
                options.maxParents = maxParents
                options.retry = RetryPolicy(baseDelay: 0.01)
                return try await Verifier(client: HTTPClient(), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
                    .verify([file], options: options)
            }
            let all = try await verify()
            #expect(all.jobs.map(\.job) == ["events", "event_comments"])
            #expect(all.jobs[1].walk.stop == .parents(3))
            #expect(all.jobs[1].walk.counts.new == 4)
            #expect(all.jobs[1].faults.map(\.description) == [
                "page 1: parent '2': GET \(server.base)/events/2/comments?page=1: HTTP 500: "
                    + "unexpected status (internal server error): down",
            ])
            #expect(!all.passed)

            let before = server.requests.count
            let one = try await verify(jobs: ["event_comments"], maxParents: 1)
            // The parent is walked for its records, and not reported.
            #expect(one.jobs.map(\.job) == ["event_comments"])
            #expect(one.passed)
            #expect(one.text.hasPrefix("event_comments: ok, 3 pages, 3 records, ended: children of 1 parent walked, "))
            #expect(server.requests.dropFirst(before).map(\.target) == [
                "/events?page=1", "/events?page=2",
                "/events/1/comments?page=1", "/events/1/comments?page=2", "/events/1/comments?page=3",
            ])
        }
        #expect(!FileManager.default.fileExists(atPath: harness.output))
    }
}
