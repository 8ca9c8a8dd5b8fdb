import Foundation
import MirrorTestSupport
import Synchronization
import Testing

/// Events listed after `?since_id=N` (all of them without it), and each event's comments.
private final class FamilyAPI: Sendable {
    let events = Mutex([1, 2])
    let failing = Mutex<Int?>(nil)

    var handler: @Sendable (FixtureRequest) async -> FixtureResponse {
        { request in
            let events = self.events.withLock { $0 }
            if request.path == "/events" {
                let floor = Int(request.parameter("since_id") ?? "") ?? 0
                let listed = request.parameter("page") == "1" ? events.filter { $0 > floor } : []
                return .json(#"{"data":[\#(listed.map { #"{"id":\#($0),"title":"event \#($0)"}"# }.joined(separator: ","))]}"#)
            }
            let parts = request.path.split(separator: "/")
            guard parts.count == 3, let id = Int(parts[1]), events.contains(id) else { return .text("no such event", status: 404) }
            if self.failing.withLock({ $0 }) == id { return .text("down", status: 503) }
            return .json(#"{"comments":[{"id":"c\#(id)","text":"on \#(id)"}]}"#)
        }
    }
}

private let familyYAML = """
    version: 1
    output: out
    jobs:
      - name: events
        url: "BASE/events?since_id={since}&page={page}"
        incremental: id
        records: data
        id: id
        table: t_event
      - name: comments
        parent: events
        url: "BASE/events/{parent.id}/comments"
        records: comments
        id: id
        table: t_comment
        retries: 0
    """

@Suite("the mirror binary: incremental and child jobs", .timeLimit(.minutes(6)))
struct FamilyTests {
    @Test("an incremental parent and its child job across runs: summaries, exit statuses, status and export")
    func family() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let api = FamilyAPI()
        try await FixtureServer.with(api.handler) { server in
            try familyYAML.replacingOccurrences(of: "BASE", with: server.base)
                .write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            let first = try await mirror(["run", "jobs.yaml"], in: folder)
            #expect(first.status == 0)
            let lines = first.stdout.split(separator: "\n")
            #expect(lines.count == 2)
            #expect(lines.first?.hasPrefix("events: ok, 2 pages, 2 records (2 new, 0 updated, 0 unchanged), stopped: empty page 2, ") == true)
            #expect(lines.last?.hasPrefix("comments: ok, 2 pages, 2 records (2 new, 0 updated, 0 unchanged), "
                + "stopped: children of 2 parents walked, ") == true)

            api.events.withLock { $0.append(3) }
            api.failing.withLock { $0 = 3 }
            let second = try await mirror(["run", "jobs.yaml"], in: folder)
            #expect(second.status == 1)
            #expect(second.stdout.contains("events: ok, 2 pages, 1 records (1 new, 0 updated, 0 unchanged), since 2, "))
            #expect(second.stdout.hasSuffix("\ncomments: FAILED: 1 of 1 parents failed (walked again by the next run); first: "
                + "job 'comments': GET \(server.base)/events/3/comments: HTTP 503: unexpected status (service unavailable): "
                + "down; page 1 not stored, nothing stored\n"))

            let status = try await mirror(["status", "jobs.yaml", "--json"], in: folder)
            #expect(status.status == 0)
            #expect(status.stdout.contains(#""since" : "2""#))
            #expect(status.stdout.contains(#""high_water" : "3""#))
            #expect(status.stdout.contains(#""parents_failed" : 1"#))
            let text = try await mirror(["status", "jobs.yaml"], in: folder)
            #expect(text.stdout.contains("\n  since: 2, highest id stored: 3\n"))
            #expect(text.stdout.contains("\n  parents: 0 pending, 1 failed\n"))

            api.failing.withLock { $0 = nil }
            let third = try await mirror(["run", "jobs.yaml"], in: folder)
            #expect(third.status == 0)
            #expect(third.stdout.contains("comments: ok, 1 page, 1 records (1 new, 0 updated, 0 unchanged), "
                + "stopped: children of 1 parent walked, "))
            #expect(third.stdout.contains("events: ok, 1 page, 0 records (0 new, 0 updated, 0 unchanged), since 3, "))
        }
        let export = try await mirror(["export", "--table", "t_comment", "--output", "out"], in: folder)
        #expect(export.status == 0)
        #expect(export.stdout == """
            {"id":"c1","text":"on 1"}
            {"id":"c2","text":"on 2"}
            {"id":"c3","text":"on 3"}

            """)
    }
}
