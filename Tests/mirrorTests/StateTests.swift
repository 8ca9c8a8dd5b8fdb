import Crypto
import Foundation
import Logging
@testable import MirrorHTTP
@testable import MirrorModel
@testable import MirrorRemote
import MirrorTestSupport
import Testing

/// The pages asked for after the `first` requests, in order.
private func pages(_ server: FixtureServer, after first: Int) -> [String] {
    server.requests.dropFirst(first).compactMap { $0.parameter("page") }
}

/// A store a test's runs keep their state in: a folder, or a bucket of moto's S3. What a run
/// is given, and how the test reads what is in the store.
private struct Store: Sendable {
    /// `--state …`, and the environment the runs need.
    let arguments: [String]
    let environment: [String: String]
    /// The bytes at `key` under the state's prefix; nil when there is none.
    let object: @Sendable (String) async throws -> [UInt8]?
    /// Writes `bytes` at `key` under the state's prefix.
    let put: @Sendable (String, [UInt8]) async throws -> Void
    let folder: String

    /// The state manifest of shard 0 of 1, as JSON.
    func manifest() async throws -> [String: Any]? {
        guard let bytes = try await object("shards/0-of-1/manifest.json") else { return nil }
        return try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
    }

    /// The records in the copy of `t_event.sqlite` the manifest names (0 in one pushed before
    /// the table was made); nil before one is pushed, or when it does not open as a database.
    func pushedRecords() async throws -> Int? {
        guard let databases = try await manifest()?["databases"] as? [[String: Any]],
              let key = databases.first?["object"] as? String, let bytes = try await object(key) else { return nil }
        let copy = folder + "/pushed-\(UUID().uuidString).sqlite"
        defer { try? FileManager.default.removeItem(atPath: copy) }
        try Data(bytes).write(to: URL(fileURLWithPath: copy))
        let tables = try await sqlite(copy, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 't_event'")
        guard tables == "1\n" else { return tables == "0\n" ? 0 : nil }
        return Int(try await sqlite(copy, "SELECT count(*) FROM t_event").trimmingCharacters(in: .whitespacesAndNewlines))
    }

    func leaseHeld() async throws -> Bool { try await object("shards/0-of-1/lease.json") != nil }

    /// The lease of shard 0 of 1, as JSON.
    func lease() async throws -> [String: Any] {
        let bytes = try #require(try await object("shards/0-of-1/lease.json"), "no lease in \(location)")
        return try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    /// Makes the lease a killed worker left behind lapse, as it does once its time has passed
    /// since its last renewal: its expiry is moved back to a moment gone by. (That a lease
    /// lapses so, and only so, is `ShardLease`'s to prove: "a kept lease is held however long
    /// its worker lives".)
    func lapseLease() async throws {
        var lease = try await lease()
        lease["expires_at"] = Timestamp.string(Date(timeIntervalSinceNow: -1))
        try await put("shards/0-of-1/lease.json", Array(try JSONSerialization.data(withJSONObject: lease)))
    }

    var location: String { arguments[1] }
}

private enum StoreKind: Sendable, CustomTestStringConvertible {
    case folder, s3

    var testDescription: String { self == .folder ? "in a folder" : "in S3" }

    /// Runs `body` with a store of this kind inside `folder`.
    func with(in folder: String, _ body: (Store) async throws -> Void) async throws {
        switch self {
        case .folder:
            let root = folder + "/store"
            try await body(Store(arguments: ["--state", "file://" + root], environment: [:], object: { key in
                FileManager.default.contents(atPath: root + "/" + key).map { [UInt8]($0) }
            }, put: { key, bytes in
                try Data(bytes).write(to: URL(fileURLWithPath: root + "/" + key))
            }, folder: folder))
        case .s3:
            try await AuthServer.withShared("s3_server.py") { server in
                let environment = ["AWS_ACCESS_KEY_ID": server.value("access_key")!,
                                   "AWS_SECRET_ACCESS_KEY": server.value("secret_key")!,
                                   "AWS_ENDPOINT_URL_S3": server.base, "AWS_REGION": "us-east-1"]
                // The server is shared: each test a bucket of its own.
                let bucket = "state-" + UUID().uuidString.prefix(8).lowercased()
                let client = S3Client(try S3Configuration(url: "s3://\(bucket)", environment: environment),
                                      logger: Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }))
                _ = try await client.exchange("PUT", key: nil)
                try await body(Store(arguments: ["--state", "s3://\(bucket)/state"], environment: environment, object: { key in
                    try await client.get("state/" + key)?.body
                }, put: { key, bytes in
                    _ = try await client.put("state/" + key, bytes)
                }, folder: folder))
            }
        }
    }
}

/// Runs `body` with a store of `kind` and `withHeldPage`'s server, in `folder`.
private func withStore(_ kind: StoreKind, heldPage: Int, gate: SlowGate, in folder: String,
                       _ body: (Store, FixtureServer) async throws -> Void) async throws {
    try await kind.with(in: folder) { store in
        try await withHeldPage(heldPage, gate: gate, jobsIn: folder) { server in try await body(store, server) }
    }
}

/// The records of the table `t_event` at `path`; 0 while there is no such table.
private func walked(_ path: String) async -> Int {
    guard FileManager.default.fileExists(atPath: path),
          let count = try? await sqlite(path, "SELECT count(*) FROM t_event") else { return 0 }
    return Int(count.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
}

/// The kinds of store these tests run against: S3 too where moto can run.
private let storeKinds: [StoreKind] = AuthServer.python == nil ? [.folder] : [.folder, .s3]

@Suite("state kept in a store (--state)", .timeLimit(.minutes(6)))
struct StateTests {
    @Test("a malformed S3 endpoint is a config error before anything is fetched: exit 2, the variable named")
    func malformedEndpoint() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with({ _ in .json(#"{"list":[]}"#) }) { server in
            try """
                version: 1
                jobs:
                  - name: events
                    url: "\(server.base)/events?page={page}"
                    records: list
                    id: id
                    table: t_event
                """.write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            let environment = ["AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret-key-example",
                               "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:", "AWS_REGION": "us-east-1"]
            for arguments in [["run", "jobs.yaml", "--state", "s3://state/p"], ["publish", "s3://state/p"]] {
                let result = try await mirror(arguments, in: folder, environment: environment)
                #expect(result.status == 2, "\(arguments[0]): \(result.stderr)")
                #expect(result.stdout == "")
                let location = arguments[0] == "run" ? "--state s3://state/p: " : ""
                #expect(result.stderr == "error: \(location)'http://127.0.0.1:' (AWS_ENDPOINT_URL_S3) has no port after ':' "
                    + "(give one from 1 to 65535, or no ':'): an endpoint is http(s)://host[:port], such as https://s3.example.com\n")
            }
            #expect(server.requests.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: folder + "/cache/t_event.sqlite"))
        }
    }

    @Test("SIGTERM pushes the state before exit 143; a second worker on the shard exits 3; an empty folder resumes at the page where the run stopped",
          arguments: storeKinds)
    fileprivate func sigtermPushesAndEmptyFolderResumes(kind: StoreKind) async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let gate = SlowGate()
        try await withStore(kind, heldPage: 4, gate: gate, in: folder) { store, server in
            let state = store.arguments
            let environment = ProcessInfo.processInfo.environment.merging(store.environment) { $1 }
            let first = try Child(mirrorBinary.path, ["run", "jobs.yaml", "--output", "one"] + state, in: folder,
                                  environment: environment, stdout: folder + "/.stdout",
                                  stderr: folder + "/.stderr")
            while (try? await sqlite(folder + "/one/t_event.sqlite", "SELECT count(*) FROM t_event")) != "150\n"
                    || !server.requests.contains(where: { $0.parameter("page") == "4" }) {
                try await Task.sleep(for: .milliseconds(10))
            }
            // Another machine on the same shard: the lease is held.
            let second = try await mirror(["run", "jobs.yaml", "--output", "two"] + state, in: folder, environment: store.environment)
            #expect(second.status == 3)
            #expect(second.stderr.contains("holds the lease shards/0-of-1/lease.json in \(store.location) until "))
            #expect(!FileManager.default.fileExists(atPath: folder + "/two/t_event.sqlite"))

            kill(first.pid, SIGTERM)
            #expect(await first.ending() == .exited(143))
            let said = try String(contentsOfFile: folder + "/.stdout", encoding: .utf8)
            #expect(said.hasPrefix("events: INTERRUPTED: job 'events': interrupted at page 4; pages 1-3 kept\n"
                + "state \(store.location) shard 0/1: pulled 0 databases and 0 files (0 bytes), pushed 1 database and 0 files ("))
            #expect(said.hasSuffix(" bytes), generation 1\n"))
            #expect(try await store.manifest()?["generation"] as? Int == 1)
            #expect(try await store.pushedRecords() == 150)
            // Given back.
            #expect(try await store.leaseHeld() == false)

            // A third machine, its folder empty: it resumes at page 4 and fetches no page again.
            gate.open()
            let asked = server.requests.count
            let third = try await mirror(["run", "jobs.yaml", "--output", "three"] + state, in: folder, environment: store.environment)
            #expect(third.status == 0)
            #expect(third.stdout.contains("events: ok, 3 pages, 100 records (100 new, 0 updated, 0 unchanged), resumed at page 4, "))
            #expect(third.stdout.contains("state \(store.location) shard 0/1: pulled 1 database and 0 files ("))
            #expect(third.stdout.hasSuffix(", generation 2\n"))
            #expect(pages(server, after: asked) == ["4", "5", "6"])
            let ids = try await sqlite(folder + "/three/t_event.sqlite", "SELECT id FROM t_event ORDER BY position")
            #expect(ids == heldPageIDs.joined().map { $0 + "\n" }.joined())
            #expect(try await store.pushedRecords() == 250)

            // The same folder again: the folder is current, nothing is pulled.
            let again = try await mirror(["run", "jobs.yaml", "--output", "three"] + state, in: folder, environment: store.environment)
            #expect(again.status == 0)
            #expect(again.stdout.contains("state \(store.location) shard 0/1: pulled 0 databases and 0 files (0 bytes), pushed "))
        }
    }

    @Test("kill -9 leaves the lease, to lapse within --lease-time; once lapsed, an empty folder resumes from the last push, no record stored twice",
          arguments: storeKinds)
    fileprivate func killedWorkerLeaseLapses(kind: StoreKind) async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let gate = SlowGate()
        try await withStore(kind, heldPage: 4, gate: gate, in: folder) { store, server in
            // Renewed every 15 s: the run right after the kill has 30 s at least to find it held.
            let state = store.arguments + ["--lease-time", "45s"]
            let environment = ProcessInfo.processInfo.environment.merging(store.environment) { $1 }
            let first = try Child(mirrorBinary.path, ["run", "jobs.yaml", "--output", "one", "--push-every", "1s"] + state,
                                  in: folder, environment: environment)
            // A push of pages 1-3 is in the store: then the worker dies.
            while try await store.pushedRecords() != 150 {
                try await Task.sleep(for: .milliseconds(50))
            }
            kill(first.pid, SIGKILL)
            _ = await first.ending()
            // Left behind, its expiry at most --lease-time from now: nothing renews it any more.
            let expires = try #require(try await store.lease()["expires_at"] as? String)
            let expiry = try #require(Timestamp.date(expires))
            #expect(expiry <= Date(timeIntervalSinceNow: 45))
            let early = try await mirror(["run", "jobs.yaml", "--output", "two"] + state, in: folder, environment: store.environment)
            #expect(early.status == 3)
            #expect(early.stderr.contains("holds the lease shards/0-of-1/lease.json in \(store.location) until "))

            try await store.lapseLease()
            gate.open()
            let asked = server.requests.count
            let rerun = try await mirror(["run", "jobs.yaml", "--output", "two"] + state, in: folder, environment: store.environment)
            #expect(rerun.status == 0)
            #expect(rerun.stdout.contains("events: ok, 3 pages, 100 records (100 new, 0 updated, 0 unchanged), resumed at page 4, "))
            #expect(pages(server, after: asked) == ["4", "5", "6"])
            #expect(try await sqlite(folder + "/two/t_event.sqlite", "SELECT count(*), count(DISTINCT id) FROM t_event") == "250|250\n")
        }
    }

    @Test("kill -9 at any moment, pushes under way: every manifest names whole objects, and each worker resumes from the last one",
          arguments: storeKinds)
    fileprivate func killedDuringPushes(kind: StoreKind) async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Pages without end, 100 records of about 1 KB each, one every 10 ms: the database
        // grows by 100 KB a page, and a push every 200 ms copies and sends it. About two kills
        // in five land inside a push (its copy is left in `.mirror-state/work`).
        let filler = String(repeating: "x", count: 1000)
        try await kind.with(in: folder) { store in
            try await FixtureServer.with({ request in
                let page = Int(request.parameter("page") ?? "") ?? 0
                try? await Task.sleep(for: .milliseconds(10))
                let records = (0..<100).map { #"{"id":"\#(page)-\#($0)","text":"\#(filler)"}"# }
                return .json(#"{"list":[\#(records.joined(separator: ","))]}"#)
            }) { server in
                try """
                    version: 1
                    jobs:
                      - name: events
                        url: "\(server.base)/events?page={page}"
                        records: list
                        id: id
                        table: t_event
                        concurrency: 1
                    """.write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
                let state = store.arguments + ["--lease-time", "3s", "--push-every", "200ms"]
                let environment = ProcessInfo.processInfo.environment.merging(store.environment) { $1 }
                var generation = 0
                var records = 0
                for round in 1...4 {
                    // Each worker starts from an empty folder, once the last one's lease has lapsed,
                    // and is killed when it has walked a while.
                    let child = try Child(mirrorBinary.path, ["run", "jobs.yaml", "--output", "w\(round)"] + state,
                                          in: folder, environment: environment, stdout: folder + "/.stdout-\(round)",
                                          stderr: folder + "/.stderr-\(round)")
                    // It has walked 3 pages past what it pulled, however slow the machine: then it
                    // dies at a moment pushes are likely under way.
                    while await walked(folder + "/w\(round)/t_event.sqlite") < records + 300 {
                        try await Task.sleep(for: .milliseconds(20))
                    }
                    try await Task.sleep(for: .milliseconds(Int.random(in: 0...800)))
                    kill(child.pid, SIGKILL)
                    #expect(await child.ending() == .signaled(SIGKILL),
                            "\(String(describing: try? String(contentsOfFile: folder + "/.stderr-\(round)", encoding: .utf8)))")
                    try await store.lapseLease()

                    // What the store holds now is whole: each object the manifest names has its
                    // size and SHA-256, opens as a database, and holds no fewer records than before.
                    guard let manifest = try await store.manifest() else {
                        #expect(generation == 0, "round \(round): the manifest of generation \(generation) is gone")
                        continue
                    }
                    let now = try #require(manifest["generation"] as? Int)
                    #expect(now >= generation)
                    generation = now
                    let databases = try #require(manifest["databases"] as? [[String: Any]])
                    #expect(databases.count == 1)
                    for database in databases {
                        let key = try #require(database["object"] as? String)
                        let bytes = try #require(try await store.object(key), "round \(round): \(key) is not in the store")
                        #expect(bytes.count == database["size"] as? Int)
                        #expect(Hex.string(SHA256.hash(data: bytes)) == database["sha256"] as? String)
                    }
                    let held = try #require(try await store.pushedRecords())
                    #expect(held >= records && held % 100 == 0, "round \(round): \(held) records, \(records) before")
                    records = held
                }

                // A last worker, stopped with SIGTERM, resumes from what the store holds and pushes.
                let last = try Child(mirrorBinary.path, ["run", "jobs.yaml", "--output", "last"] + state,
                                     in: folder, environment: environment, stdout: folder + "/.stdout-last")
                while await walked(folder + "/last/t_event.sqlite") < records + 300 {
                    try await Task.sleep(for: .milliseconds(20))
                }
                kill(last.pid, SIGTERM)
                #expect(await last.ending() == .exited(143))
                let said = try String(contentsOfFile: folder + "/.stdout-last", encoding: .utf8)
                #expect(said.contains("state \(store.location) shard 0/1: pulled \(generation > 0 ? "1 database" : "0 databases") and 0 files ("),
                        "\(said)")
                let final = try #require(try await store.pushedRecords())
                #expect(final >= records + 300)
                #expect(try await sqlite(folder + "/last/t_event.sqlite", "SELECT count(*) = count(DISTINCT id) FROM t_event") == "1\n")
            }
        }
    }
}
