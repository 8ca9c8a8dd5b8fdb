import Foundation
import MirrorTestSupport
import Synchronization
import Testing

private let jobYAML = """
    version: 1
    output: out
    jobs:
      - name: events
        url: "BASE/events?page={page}&key=${API_KEY}"
        records: data.list
        id: id
        table: t_event
        concurrency: 1
    """

/// A switch the test flips while the server runs.
private final class Flag: Sendable {
    private let state: Mutex<Bool>
    init(_ value: Bool) { state = Mutex(value) }
    var isSet: Bool { state.withLock { $0 } }
    func set() { state.withLock { $0 = true } }
}

/// Two pages of records; page 2 answers 429 with `Retry-After: 3600` while `limited` is set.
private func serve(_ limited: Flag) -> @Sendable (FixtureRequest) async -> FixtureResponse {
    { request in
        switch request.parameter("page") {
        case "1": return .json(#"{"data":{"list":[{"id":"1"}]}}"#)
        case "2" where limited.isSet:
            return FixtureResponse(status: 429, headers: [("Retry-After", "3600")], body: Array("slow down".utf8))
        case "2": return .json(#"{"data":{"list":[{"id":"2"}]}}"#)
        default: return .json(#"{"data":{"list":[]}}"#)
        }
    }
}

/// `2026-11-22T21:15:00.000Z` as a time.
private func time(_ text: String) -> Date? {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.date(from: text)
}

@Suite("a deferred run, through the binary", .timeLimit(.minutes(6)))
struct DeferralBinaryTests {
    @Test("a long Retry-After: exit 75, the DEFERRED line, --report and status --json say deferred; status --check passes while the job is not stale; a run before the resume time asks nothing")
    func deferred() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let limited = Flag(false)
        try await FixtureServer.with(serve(limited)) { server in
            try jobYAML.replacingOccurrences(of: "BASE", with: server.base).write(toFile: folder + "/jobs.yaml", atomically: true,
                                                                                   encoding: .utf8)
            let environment = ["API_KEY": "s3cr3t-key"]
            #expect(try await mirror(["run", "jobs.yaml"], in: folder, environment: environment).status == 0)
            limited.set()

            let before = Date()
            let run = try await mirror(["run", "jobs.yaml", "--report", "report.json"], in: folder, environment: environment)
            let after = Date()
            #expect(run.status == 75)
            let prefix = "events: DEFERRED: job 'events': GET \(server.base)/events?page=2&key=REDACTED: HTTP 429: Retry-After asks "
                + "to wait 1h, longer than max_wait 5m; deferred until "
            let suffix = ": page 2 not stored, page 1 kept\n"
            #expect(run.stdout.hasPrefix(prefix) && run.stdout.hasSuffix(suffix))
            let until = String(run.stdout.dropFirst(prefix.count).dropLast(suffix.count))
            let resume = try #require(time(until))
            #expect(resume >= before.addingTimeInterval(3600).addingTimeInterval(-1) && resume <= after.addingTimeInterval(3601))
            #expect(run.stderr.contains("job deferred") && !run.stderr.contains("s3cr3t"))

            let report = try #require(try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: folder + "/report.json"))) as? [String: Any])
            #expect(report["exit_status"] as? Int == 75)
            let job = try #require((report["jobs"] as? [[String: Any]])?.first)
            #expect(job["status"] as? String == "deferred" && job["resume_after"] as? String == until)
            #expect(job["stop_reason"] as? String == "deferred" && job["complete"] as? Bool == false)

            let status = try await mirror(["status", "jobs.yaml", "--json"], in: folder, environment: environment)
            #expect(status.status == 0)
            let folders = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [[String: Any]])
            let shown = try #require((folders.first?["jobs"] as? [[String: Any]])?.first)
            #expect(shown["stale"] as? Bool == false)
            let lastRun = try #require(shown["last_run"] as? [String: Any])
            #expect(lastRun["status"] as? String == "deferred" && lastRun["resume_after"] as? String == until)

            // Deferred, not failed: the job ran well within the day, so the check passes.
            let check = try await mirror(["status", "jobs.yaml", "--check"], in: folder, environment: environment)
            #expect(check.status == 0)
            #expect(check.stdout.contains(" deferred, 1 pages, 0 new, 0 updated, 1 unchanged, stopped: deferred, resumes after \(until)\n"))

            // Before the time the API named, a run asks it nothing; under --quiet it prints nothing either.
            let asked = server.requests.count
            let quiet = try await mirror(["run", "jobs.yaml", "--quiet"], in: folder, environment: environment)
            #expect(quiet.status == 75 && quiet.stdout == "" && quiet.stderr == "")
            let again = try await mirror(["run", "jobs.yaml"], in: folder, environment: environment)
            #expect(again.status == 75)
            #expect(again.stdout == "events: DEFERRED: job 'events': not walked: an earlier run deferred it until \(until), as "
                + "the API asked; the first run after then resumes at page 2\n")
            #expect(server.requests.count == asked)
        }
        let help = try await mirror(["help", "run"], in: folder)
        // The help text is wrapped to the terminal's width.
        #expect(help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            .contains("75 no job failed and at least one was deferred (EX_TEMPFAIL)"))
    }

    @Test("a job deferred before it ever succeeded is stale: status --check fails")
    func deferredNeverSucceeded() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with(serve(Flag(true))) { server in
            try jobYAML.replacingOccurrences(of: "BASE", with: server.base).write(toFile: folder + "/jobs.yaml", atomically: true,
                                                                                   encoding: .utf8)
            #expect(try await mirror(["run", "jobs.yaml"], in: folder, environment: ["API_KEY": "k"]).status == 75)
        }
        let check = try await mirror(["status", "jobs.yaml", "--check"], in: folder, environment: ["API_KEY": "k"])
        #expect(check.status == 1)
        #expect(check.stdout.contains(" deferred, 1 pages, 1 new, 0 updated, 0 unchanged, stopped: deferred, resumes after "))
        #expect(check.stdout.contains(", STALE\n"))
    }
}
