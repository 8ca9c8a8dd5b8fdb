import Foundation
import MirrorTestSupport
import Testing

/// 5 pages of 50 records, each id `page·1000 + n`.
private let pageIDs = (1...5).map { page in (0..<50).map { "\(page * 1000 + $0)" } }

/// Serves `pageIDs` (then an empty page), page `held` held until `gate` opens, and writes
/// `folder/jobs.yaml`: one job walking it one page at a time.
private func withHeldPage(_ held: Int, gate: SlowGate, jobsIn folder: String,
                          _ body: (FixtureServer) async throws -> Void) async throws {
    try await FixtureServer.with({ request in
        let page = Int(request.parameter("page") ?? "") ?? 0
        while page == held, gate.isClosed { try? await Task.sleep(for: .milliseconds(20)) }
        let ids = page >= 1 && page <= 5 ? pageIDs[page - 1] : []
        return .json(#"{"data":{"list":[\#(ids.map { #"{"id":"\#($0)"}"# }.joined(separator: ","))]}}"#)
    }) { server in
        try """
            version: 1
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

/// The pages asked for after the `first` requests, in order.
private func pages(_ server: FixtureServer, after first: Int) -> [String] {
    server.requests.dropFirst(first).compactMap { $0.parameter("page") }
}

/// The state manifest of shard 0 of 1 in the folder store `store`, as JSON.
private func manifest(_ store: String) -> [String: Any]? {
    guard let data = FileManager.default.contents(atPath: store + "/shards/0-of-1/manifest.json") else { return nil }
    return try? JSONSerialization.jsonObject(with: data) as? [String: Any]
}

/// The records in the copy of `t_event.sqlite` the manifest of `store` names; nil before one is pushed.
private func pushedRecords(_ store: String) async throws -> Int? {
    guard let databases = manifest(store)?["databases"] as? [[String: Any]],
          let object = databases.first?["object"] as? String else { return nil }
    return Int(try await sqlite(store + "/" + object, "SELECT count(*) FROM t_event")
        .trimmingCharacters(in: .whitespacesAndNewlines))
}

@Suite("state kept in a store (--state)")
struct StateTests {
    @Test("SIGTERM pushes the state before exit 143; a second worker on the shard exits 3; an empty folder resumes at the page where the run stopped")
    func sigtermPushesAndEmptyFolderResumes() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = folder + "/store"
        let gate = SlowGate()
        try await withHeldPage(4, gate: gate, jobsIn: folder) { server in
            let state = ["--state", "file://" + store]
            let first = try Child(mirrorBinary.path, ["run", "jobs.yaml", "--output", "one"] + state, in: folder,
                                  environment: ProcessInfo.processInfo.environment, stdout: folder + "/.stdout",
                                  stderr: folder + "/.stderr")
            while (try? await sqlite(folder + "/one/t_event.sqlite", "SELECT count(*) FROM t_event")) != "150\n"
                    || !server.requests.contains(where: { $0.parameter("page") == "4" }) {
                try await Task.sleep(for: .milliseconds(10))
            }
            // Another machine on the same shard: the lease is held.
            let second = try await mirror(["run", "jobs.yaml", "--output", "two"] + state, in: folder)
            #expect(second.status == 3)
            #expect(second.stderr.contains("holds the lease shards/0-of-1/lease.json in file://\(store) until "))
            #expect(!FileManager.default.fileExists(atPath: folder + "/two/t_event.sqlite"))

            kill(first.pid, SIGTERM)
            #expect(await first.ending() == .exited(143))
            let said = try String(contentsOfFile: folder + "/.stdout", encoding: .utf8)
            #expect(said.hasPrefix("events: INTERRUPTED: job 'events': interrupted at page 4; pages 1-3 kept\n"
                + "state file://\(store) shard 0/1: pulled 0 databases (0 bytes), pushed 1 database and 0 files ("))
            #expect(said.hasSuffix(" bytes), generation 1\n"))
            #expect(manifest(store)?["generation"] as? Int == 1)
            #expect(try await pushedRecords(store) == 150)
            // Given back.
            #expect(!FileManager.default.fileExists(atPath: store + "/shards/0-of-1/lease.json"))

            // A third machine, its folder empty: it resumes at page 4 and fetches no page again.
            gate.open()
            let asked = server.requests.count
            let third = try await mirror(["run", "jobs.yaml", "--output", "three"] + state, in: folder)
            #expect(third.status == 0)
            #expect(third.stdout.contains("events: ok, 3 pages, 100 records (100 new, 0 updated, 0 unchanged), resumed at page 4, "))
            #expect(third.stdout.contains("state file://\(store) shard 0/1: pulled 1 database ("))
            #expect(third.stdout.hasSuffix(", generation 2\n"))
            #expect(pages(server, after: asked) == ["4", "5", "6"])
            let ids = try await sqlite(folder + "/three/t_event.sqlite", "SELECT id FROM t_event ORDER BY position")
            #expect(ids == pageIDs.joined().map { $0 + "\n" }.joined())
            #expect(try await pushedRecords(store) == 250)

            // The same folder again: the folder is current, nothing is pulled.
            let again = try await mirror(["run", "jobs.yaml", "--output", "three"] + state, in: folder)
            #expect(again.status == 0)
            #expect(again.stdout.contains("state file://\(store) shard 0/1: pulled 0 databases (0 bytes), pushed "))
        }
    }

    @Test("kill -9 leaves the lease until it lapses; then an empty folder resumes from the last push, no record stored twice")
    func killedWorkerLeaseLapses() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = folder + "/store"
        let gate = SlowGate()
        try await withHeldPage(4, gate: gate, jobsIn: folder) { server in
            let state = ["--state", "file://" + store, "--lease-time", "6s"]
            let first = try Child(mirrorBinary.path, ["run", "jobs.yaml", "--output", "one", "--push-every", "1s"] + state,
                                  in: folder, environment: ProcessInfo.processInfo.environment)
            // A push of pages 1-3 is in the store: then the worker dies.
            while try await pushedRecords(store) != 150 {
                try await Task.sleep(for: .milliseconds(50))
            }
            kill(first.pid, SIGKILL)
            _ = await first.ending()
            #expect(FileManager.default.fileExists(atPath: store + "/shards/0-of-1/lease.json"))
            let early = try await mirror(["run", "jobs.yaml", "--output", "two"] + state, in: folder)
            #expect(early.status == 3)

            gate.open()
            let asked = server.requests.count
            var rerun = early
            let started = ContinuousClock.now
            while rerun.status == 3, ContinuousClock.now - started < .seconds(60) {
                try await Task.sleep(for: .milliseconds(500))
                rerun = try await mirror(["run", "jobs.yaml", "--output", "two"] + state, in: folder)
            }
            #expect(rerun.status == 0)
            #expect(rerun.stdout.contains("events: ok, 3 pages, 100 records (100 new, 0 updated, 0 unchanged), resumed at page 4, "))
            #expect(pages(server, after: asked) == ["4", "5", "6"])
            #expect(try await sqlite(folder + "/two/t_event.sqlite", "SELECT count(*), count(DISTINCT id) FROM t_event") == "250|250\n")
        }
    }
}
