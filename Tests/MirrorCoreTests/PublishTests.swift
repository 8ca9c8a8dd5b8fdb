import Crypto
import Foundation
import Logging
@testable import MirrorCore
@testable import MirrorHTTP
@testable import MirrorJobFile
@testable import MirrorModel
@testable import MirrorExport
@testable import MirrorRemote
@testable import MirrorReplay
import MirrorTestSupport
import Synchronization
import Testing

/// A value shared with closures that escape the test's scope.
private final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    var value: Value { mutex.withLock { $0 } }

    func set(_ value: Value) { mutex.withLock { $0 = value } }
}

private let quiet = Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() })

/// Runs `body` with a client of a new bucket `name`, prefix `devices`, on a fresh moto server.
private func withBucket(_ name: String, _ body: (S3Client) async throws -> Void) async throws {
    try await AuthServer.withShared("s3_server.py") { server in
        let environment = ["AWS_ACCESS_KEY_ID": server.value("access_key")!, "AWS_SECRET_ACCESS_KEY": server.value("secret_key")!,
                           "AWS_ENDPOINT_URL_S3": server.base, "AWS_REGION": "us-east-1"]
        let configuration = try S3Configuration(url: "s3://\(name)/devices", environment: environment)
        let client = S3Client(configuration, logger: quiet, policy: RetryPolicy(baseDelay: 0.01))
        _ = try await client.exchange("PUT", key: nil)
        try await body(client)
    }
}

/// An output folder holding one table, `table`, of `count` records, stored by a run of a job
/// against the fixture server.
private func outputFolder(table: String = "t_item", count: Int = 12) async throws -> Harness {
    let harness = try Harness()
    let ids = (1...count).map { "\(table)-\($0)" }
    try await FixtureServer.with({ request in
        .json(PagedAPI(ids: [ids]).body(page: Int(request.parameter("page") ?? "") ?? 0))
    }) { server in
        let summary = try await harness.run(itemsJob().replacingOccurrences(of: "table: t_item", with: "table: \(table)"),
                                            server: server)
        #expect(summary.jobs.map(\.error) == [nil])
    }
    return harness
}

private func publisher(_ harness: Harness, _ client: S3Client, shard: String = "0/1", keep: Int = 3,
                       withPages: Bool? = nil) -> Publisher {
    var options = Publisher.Options(output: harness.output, shard: ShardPlan.Shard(shard)!, mirrorVersion: "test")
    options.keep = keep
    if let withPages { options.withPages = withPages }
    return Publisher(options: options, client: client, logger: quiet)
}

/// The top-level manifest as it is now.
private func topLevel(_ client: S3Client) async throws -> PublishManifest {
    let object = try #require(try await client.get("devices/manifest.json"))
    return try PublishManifest.decoded(object.body)
}

/// What a device finds when it reads `manifest`: every object it names is there, of its
/// size and SHA-256, and the shard's own manifest names the same databases. The problems, if any.
private func problems(reading manifest: PublishManifest, _ client: S3Client) async throws -> [String] {
    var problems: [String] = []
    for entry in manifest.entries {
        let root = "devices/generations/\(entry.generation)/shard-\(entry.shard)/"
        if entry.manifest != root + "manifest.json" { problems.append("\(entry.manifest) is not the shard's manifest") }
        var bodies: [String: [UInt8]] = [:]
        for object in entry.objects {
            guard object.key.hasPrefix(root), let got = try await client.get(object.key) else {
                problems.append("\(object.key) is missing")
                continue
            }
            bodies[object.key] = got.body
            if got.body.count != object.bytes { problems.append("\(object.key) has \(got.body.count) bytes, not \(object.bytes)") }
            let digest = Hex.string(SHA256.hash(data: got.body))
            if digest != object.sha256 { problems.append("\(object.key) has SHA-256 \(digest), not \(object.sha256)") }
        }
        guard let shardManifest = bodies[entry.manifest] else {
            problems.append("\(entry.manifest) is not among the objects")
            continue
        }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let snapshot = try decoder.decode(SnapshotManifest.self, from: Data(shardManifest))
        let named = snapshot.databases.map {
            PublishManifest.Object(key: root + $0.path, path: String((root + $0.path).dropFirst("devices/".count)),
                                   bytes: $0.bytes, sha256: $0.sha256)
        }
        let listed = entry.objects.filter { $0.key != entry.manifest }
        if named != listed { problems.append("shard \(entry.shard): its manifest names \(named), the top-level one \(listed)") }
    }
    return problems
}

/// The generation ids of shard `shard` in the bucket, and their keys' last parts.
private func generations(_ client: S3Client, shard: Int = 0) async throws -> [String: [String]] {
    var found: [String: [String]] = [:]
    for object in try await client.list(prefix: "devices/generations/") {
        let parts = object.key.split(separator: "/")
        guard parts[3] == "shard-\(shard)" else { continue }
        found[String(parts[2]), default: []].append(parts[4...].joined(separator: "/"))
    }
    return found
}

@Suite("publishing to S3 against a real server",
       .enabled(if: AuthServer.python != nil, "MIRROR_TEST_PYTHON is not set (scripts/test.sh sets it)"), .timeLimit(.minutes(6)))
struct PublishTests {
    @Test("two publishes leave two generations; the manifest names the second, each size and SHA-256 the object's own")
    func publishTwice() async throws {
        let harness = try await outputFolder()
        // The folder of a publish killed earlier (its lock free) goes; one whose lock is held stays.
        let killed = harness.output + "/.publish-killed"
        let running = harness.output + "/.publish-running"
        for folder in [killed, running] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
            #expect(FileManager.default.createFile(atPath: folder + "/lock", contents: nil))
        }
        let held = open(running + "/lock", O_RDWR | O_CLOEXEC)
        #expect(flock(held, LOCK_EX | LOCK_NB) == 0)
        defer { close(held) }
        try await withBucket("twice") { client in
            let first = try await publisher(harness, client).publish()
            #expect(!FileManager.default.fileExists(atPath: killed))
            #expect(FileManager.default.fileExists(atPath: running + "/lock"))
            try FileManager.default.removeItem(atPath: running)
            let second = try await publisher(harness, client).publish()
            #expect(first.generation < second.generation)
            #expect(GenerationID.isID(first.generation[...]) && GenerationID.isID(second.generation[...]))
            #expect(try await generations(client) == [first.generation: ["manifest.json", "t_item.sqlite"],
                                                      second.generation: ["manifest.json", "t_item.sqlite"]])
            let manifest = try await topLevel(client)
            #expect(manifest.format == 1 && manifest.shards == 1)
            #expect(manifest.entries.map(\.generation) == [second.generation])
            #expect(manifest.entries.map(\.shard) == [0])
            let objects = try #require(manifest.entries.first?.objects)
            #expect(objects.map(\.key) == ["manifest.json", "t_item.sqlite"].map {
                "devices/generations/\(second.generation)/shard-0/\($0)"
            })
            #expect(second.objects == 2)
            #expect(second.bytes == objects.reduce(0) { $0 + $1.bytes })
            #expect(second.removed == [] && second.warnings == [])
            #expect(try await problems(reading: manifest, client) == [])
            // The hidden folder the snapshot was made in is gone.
            #expect(try FileManager.default.contentsOfDirectory(atPath: harness.output).filter { $0.hasPrefix(".publish-") } == [])
        }
    }

    @Test("a generation carries the stored pages unless asked not to: its database answers the API's URLs as the output folder does")
    func pages() async throws {
        let harness = try await outputFolder(count: 3)
        let targets = ["/items?page=1", "/items?page=2"]
        func answers(_ folder: String) throws -> [(Int, [UInt8])] {
            let pages = ReplayedPages(output: folder, cache: PageCache(limit: 0))
            return try targets.map { target in
                switch try pages.answer(method: "GET", target: target, body: [], origin: "http://device.local", ifNoneMatch: nil) {
                case let .whole(status, _, body): (status, body)
                case let .kept(entry, _): (entry.status, (entry.answer as? KeptBytes)?.body ?? [])
                case let .streamed(status, _, page): (status, page.first)
                }
            }
        }
        let output = try answers(harness.output)
        #expect(output.map(\.0) == [200, 200])
        try await withBucket("pages") { client in
            for withPages in [nil, false] {
                let published = try await publisher(harness, client, withPages: withPages).publish()
                let key = "devices/generations/\(published.generation)/shard-0/"
                let folder = harness.folder + "/device-\(published.generation)"
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                for name in ["t_item.sqlite", "manifest.json"] {
                    let object = try #require(try await client.get(key + name))
                    #expect(FileManager.default.createFile(atPath: folder + "/" + name, contents: Data(object.body)))
                }
                let manifest = try JSONDecoder.snakeCase.decode(SnapshotManifest.self,
                                                                from: Data(contentsOf: URL(fileURLWithPath: folder + "/manifest.json")))
                let got = try answers(folder)
                if withPages == nil {
                    #expect(manifest.databases.map(\.pages) == [true])
                    #expect(got.map(\.0) == output.map(\.0) && got.map(\.1) == output.map(\.1))
                } else {
                    #expect(manifest.databases.map(\.pages) == [false])
                    #expect(got.map(\.0) == [404, 404])
                }
            }
        }
    }

    @Test("each object and entry names its path under the prefix; a manifest an earlier mirror wrote without them gets them")
    func paths() async throws {
        let harness = try await outputFolder(count: 3)
        try await withBucket("paths") { client in
            // An entry of shard 1 as an earlier mirror wrote it: keys only.
            let earlier = #"{"entries":[{"generation":"20261127T101500.123Z-3fa4c2e1","manifest":"devices/generations/"#
                + #"20261127T101500.123Z-3fa4c2e1/shard-1/manifest.json","objects":[{"bytes":5,"key":"devices/generations/"#
                + #"20261127T101500.123Z-3fa4c2e1/shard-1/manifest.json","sha256":"00"}],"published_at":"t","shard":1}],"#
                + #""format":1,"shards":2,"updated_at":"t"}"#
            _ = try await client.put("devices/manifest.json", Array(earlier.utf8))
            let published = try await publisher(harness, client, shard: "0/2").publish()
            let root = "generations/\(published.generation)/shard-0/"
            let manifest = try await topLevel(client)
            #expect(manifest.format == 1)
            #expect(manifest.entries.map(\.manifestPath) == [root + "manifest.json",
                                                             "generations/20261127T101500.123Z-3fa4c2e1/shard-1/manifest.json"])
            #expect(manifest.entries[0].objects.map(\.path) == [root + "manifest.json", root + "t_item.sqlite"])
            #expect(manifest.entries[1].objects.map(\.path) == ["generations/20261127T101500.123Z-3fa4c2e1/shard-1/manifest.json"])
            for object in manifest.entries.flatMap(\.objects) { #expect(object.key == "devices/" + (object.path ?? "")) }
            let text = String(decoding: try #require(try await client.get("devices/manifest.json")).body, as: UTF8.self)
            #expect(text.contains(#""manifest_path" : "\#(root)manifest.json""#))
            #expect(text.contains(#""path" : "\#(root)t_item.sqlite""#))
        }
    }

    @Test("--keep 1 removes the older generations' objects, never the new one nor one the manifest names")
    func keep() async throws {
        let harness = try await outputFolder()
        try await withBucket("keep") { client in
            let a = try await publisher(harness, client).publish()
            let b = try await publisher(harness, client).publish()
            let c = try await publisher(harness, client, keep: 1).publish()
            #expect(c.removed == [a.generation, b.generation])
            #expect(try await generations(client) == [c.generation: ["manifest.json", "t_item.sqlite"]])
            let manifest = try await topLevel(client)
            #expect(manifest.entries.map(\.generation) == [c.generation])
            #expect(try await problems(reading: manifest, client) == [])

            // A generation uploaded whole but never named (its manifest write failed) ...
            var failing = publisher(harness, client, keep: 1)
            failing.beforeManifestWrite = { _ in throw CancellationError() }
            let unnamed = failing
            await #expect(throws: CancellationError.self) { try await unnamed.publish() }
            let d = try #require(try await generations(client).keys.first { $0 != c.generation })
            #expect(try await topLevel(client).entries.map(\.generation) == [c.generation])
            // ... is the newest: with --keep 1 it is kept, and so is the one the manifest names.
            #expect(try await publisher(harness, client, keep: 1).removeOldGenerations(current: d) == [])
            #expect(Set(try await generations(client).keys) == [c.generation, d])
            // An incomplete older generation (a publish stopped half way) is removed.
            try await client.delete("devices/generations/\(d)/shard-0/manifest.json")
            let e = try await publisher(harness, client, keep: 1).publish()
            #expect(e.removed == [c.generation, d])
            #expect(try await generations(client) == [e.generation: ["manifest.json", "t_item.sqlite"]])
        }
    }

    @Test("a signal during the upload stops it: nothing named, no folder left; the next publish removes what went up")
    func stopped() async throws {
        let harness = try await outputFolder()
        try await withBucket("stopped") { client in
            let first = try await publisher(harness, client).publish()
            let (signals, send) = AsyncStream<Int32>.makeStream()
            var slow = publisher(harness, client)
            slow.afterUpload = { _ in
                send.yield(SIGTERM)
                try await Task.sleep(for: .seconds(600))
            }
            let stopping = slow
            let (result, stop) = try await GracefulStop.run(.stream(signals)) {
                do {
                    return Result<Publisher.Published, any Error>.success(try await stopping.publish())
                } catch {
                    return .failure(error)
                }
            }
            #expect(stop == .signal(SIGTERM))
            #expect(throws: CancellationError.self) { try result.get() }
            #expect(try await topLevel(client).entries.map(\.generation) == [first.generation])
            #expect(try FileManager.default.contentsOfDirectory(atPath: harness.output).filter { $0.hasPrefix(".publish-") } == [])
            let left = try #require(try await generations(client).first { $0.key != first.generation })
            #expect(left.value == ["t_item.sqlite"])

            let next = try await publisher(harness, client).publish()
            #expect(next.removed == [left.key])
            #expect(Set(try await generations(client).keys) == [first.generation, next.generation])
        }
    }

    @Test("two shards from two output folders: the manifest holds both entries; another shard count replaces it")
    func twoShards() async throws {
        let items = try await outputFolder()
        let tags = try await outputFolder(table: "t_tag", count: 3)
        try await withBucket("shards") { client in
            _ = try await publisher(items, client).publish()
            let zero = try await publisher(items, client, shard: "0/2").publish()
            #expect(zero.warnings == ["the top-level manifest named generations of 1 shard: replaced by one of 2 shards, "
                + "naming shard 0 alone until the others publish"])
            let one = try await publisher(tags, client, shard: "1/2").publish()
            #expect(one.warnings == [])
            var manifest = try await topLevel(client)
            #expect(manifest.shards == 2)
            #expect(manifest.entries.map(\.shard) == [0, 1])
            #expect(manifest.entries.map(\.generation) == [zero.generation, one.generation])
            #expect(manifest.entries[1].objects.map(\.key).map { $0.split(separator: "/").last! } == ["manifest.json", "t_tag.sqlite"])
            #expect(try await problems(reading: manifest, client) == [])

            // Shard 0 again: only its entry moves.
            let again = try await publisher(items, client, shard: "0/2").publish()
            manifest = try await topLevel(client)
            #expect(manifest.entries.map(\.generation) == [again.generation, one.generation])

            let three = try await publisher(tags, client, shard: "2/3").publish()
            #expect(three.warnings == ["the top-level manifest named generations of 2 shards: replaced by one of 3 shards, "
                + "naming shard 2 alone until the others publish"])
            manifest = try await topLevel(client)
            #expect(manifest.shards == 3)
            #expect(manifest.entries.map(\.shard) == [2])
            #expect(try await problems(reading: manifest, client) == [])
        }
    }

    @Test("a device polling the manifest while generations are published always finds whole generations")
    func pollingReader() async throws {
        let harness = try await outputFolder(count: 40)
        try await withBucket("polling") { client in
            _ = try await publisher(harness, client).publish()
            let done = Shared(false)
            // Retention is not what is tested here: nothing is removed while the reader reads.
            let reader = Task {
                var rounds: [(generation: String, problems: [String])] = []
                // The last round starts after the last publish ended, so it reads its manifest.
                while true {
                    let finished = done.value
                    let manifest = try await topLevel(client)
                    rounds.append((manifest.entries.map(\.generation).joined(), try await problems(reading: manifest, client)))
                    if finished, rounds.count >= 2 { return rounds }
                }
            }
            var published: [String] = []
            for _ in 0..<4 {
                published.append(try await publisher(harness, client, keep: 10).publish().generation)
            }
            done.set(true)
            let rounds = try await reader.value
            #expect(rounds.flatMap(\.problems) == [])
            #expect(rounds.last?.generation == published.last)
            #expect(Set(rounds.map(\.generation)).isSubset(of: Set(published + (try await generations(client)).keys)))
        }
    }

    @Test("a top-level manifest mirror cannot read is named, with what is wrong with it in plain words, and left as it is")
    func damagedManifest() async throws {
        let items = try await outputFolder()
        try await withBucket("damaged") { client in
            let text = Array(#"{"format": 1, "shards": 1, "entries": []}"#.utf8)
            _ = try await client.put("devices/manifest.json", text, condition: nil)
            let error = await #expect(throws: Publisher.Failure.self) { try await publisher(items, client).publish() }
            #expect(error?.description == "s3://damaged/devices/manifest.json is not a manifest mirror publish writes "
                + "(member 'updated_at' is missing): left as it is (remove it, or publish to another prefix)")
            #expect(try await client.get("devices/manifest.json")?.body == text)
        }
    }

    @Test("another writer's change between read and write is a lost condition: read again, written again, both entries kept")
    func lostCondition() async throws {
        let items = try await outputFolder()
        let tags = try await outputFolder(table: "t_tag", count: 3)
        try await withBucket("race") { client in
            // The first time the manifest is absent (If-None-Match: *), the second it is there (If-Match).
            for round in 0..<2 {
                let attempts = Shared<[Int]>([])
                let other = Shared<String?>(nil)
                var zero = publisher(items, client, shard: "0/2")
                zero.beforeManifestWrite = { attempt in
                    attempts.set(attempts.value + [attempt])
                    if attempt == 1 {
                        let generation = try await publisher(tags, client, shard: "1/2").publish().generation
                        other.set(generation)
                    }
                }
                let mine = try await zero.publish()
                #expect(attempts.value == [1, 2], "round \(round)")
                let manifest = try await topLevel(client)
                #expect(manifest.entries.map(\.shard) == [0, 1])
                #expect(manifest.entries.map(\.generation) == [mine.generation, try #require(other.value)])
                #expect(try await problems(reading: manifest, client) == [])
            }
        }
    }
}

@Suite("published manifests", .timeLimit(.minutes(6)))
struct PublishManifestTests {
    static func entry(_ shard: Int, _ generation: String) -> PublishManifest.Entry {
        PublishManifest.Entry(shard: shard, generation: generation, publishedAt: "t", manifest: "m", objects: [])
    }

    @Test("an entry replaces its shard's only with a later generation; another shard count starts a new manifest")
    func merge() throws {
        let old = PublishManifest(format: 1, shards: 2, updatedAt: "t0",
                                  entries: [Self.entry(0, "20261127T101500.000Z-00000000"), Self.entry(1, "20261127T101500.000Z-11111111")])
        let later = Self.entry(0, "20261127T101600.000Z-00000000")
        #expect(PublishManifest.merge(later, shards: 2, into: old, at: "t1")
            == .write(PublishManifest(format: 1, shards: 2, updatedAt: "t1", entries: [later, old.entries[1]])))
        #expect(PublishManifest.merge(Self.entry(0, "20261127T101400.000Z-ffffffff"), shards: 2, into: old, at: "t1")
            == .superseded(by: "20261127T101500.000Z-00000000"))
        #expect(PublishManifest.merge(old.entries[0], shards: 2, into: old, at: "t1") == .alreadyNamed)
        #expect(PublishManifest.merge(later, shards: 3, into: old, at: "t1")
            == .write(PublishManifest(format: 1, shards: 3, updatedAt: "t1", entries: [later])))
        #expect(PublishManifest.merge(later, shards: 1, into: nil, at: "t1")
            == .write(PublishManifest(format: 1, shards: 1, updatedAt: "t1", entries: [later])))
        let text = String(decoding: try PublishManifest(format: 1, shards: 1, updatedAt: "t1", entries: [later]).encoded(), as: UTF8.self)
        #expect(text.contains(#""published_at" : "t""#) && text.contains(#""updated_at" : "t1""#))
        #expect(try PublishManifest.decoded(Array(text.utf8)).entries == [later])
    }

    @Test("generation ids: the UTC millisecond, then 8 hex digits; text order is time order")
    func generationIDs() {
        let id = GenerationID.make(at: Date(timeIntervalSince1970: 1_795_774_500.75))
        #expect(id.hasPrefix("20261127T101500.750Z-") && id.count == 29)
        #expect(GenerationID.isID(id[...]))
        #expect(GenerationID.make(at: Date(timeIntervalSince1970: 1_795_774_501)) > id)
        for bad in ["20261127T101500.700Z-0000000", "20261127T101500.700Z-0000000G", "2026112XT101500.700Z-00000000",
                    "20261127T101500Z-00000000", "x"] {
            #expect(!GenerationID.isID(bad[...]), "\(bad)")
        }
    }
}

/// What a device finds when it reads `BASE/manifest.json` from the folder `root`: each object
/// at `BASE/<path>`, of its size and SHA-256; the problems, if any.
private func problems(readingFolder root: String) throws -> [String] {
    let manifest = try PublishManifest.decoded(Array(try Data(contentsOf: URL(fileURLWithPath: root + "/manifest.json"))))
    var problems: [String] = []
    for entry in manifest.entries {
        if entry.manifestPath != "generations/\(entry.generation)/shard-\(entry.shard)/manifest.json" {
            problems.append("shard \(entry.shard): manifest_path \(entry.manifestPath ?? "none")")
        }
        for object in entry.objects {
            guard let path = object.path, object.key == path,
                  let bytes = FileManager.default.contents(atPath: root + "/" + path) else {
                problems.append("\(object.key) is missing")
                continue
            }
            if bytes.count != object.bytes { problems.append("\(path) has \(bytes.count) bytes, not \(object.bytes)") }
            let digest = Hex.string(SHA256.hash(data: bytes))
            if digest != object.sha256 { problems.append("\(path) has SHA-256 \(digest), not \(object.sha256)") }
        }
    }
    return problems
}

/// Everything under `folder`, folders too, relative to it, sorted.
private func entries(under folder: String) -> [String] {
    (FileManager.default.enumerator(atPath: folder)?.compactMap { $0 as? String } ?? []).sorted()
}

@Suite("publishing to a folder", .timeLimit(.minutes(6)))
struct FolderPublishTests {
    private func publisher(_ harness: Harness, to root: String, shard: String = "0/1", keep: Int = 3) -> Publisher {
        var options = Publisher.Options(output: harness.output, shard: ShardPlan.Shard(shard)!, mirrorVersion: "test")
        options.keep = keep
        return Publisher(options: options, folder: root, logger: quiet)
    }

    @Test("two shards publishing to one folder at once keep both entries; each object's size and SHA-256 the manifest's")
    func twoShards() async throws {
        let zero = try await outputFolder(table: "t_zero")
        let one = try await outputFolder(table: "t_one")
        let root = zero.folder + "/pub/events"
        // Shard 0 reads the manifest (none yet), then shard 1 publishes whole before shard 0 writes.
        let latch = Latch()
        let written = Latch()
        var first = publisher(zero, to: root, shard: "0/2")
        first.beforeManifestWrite = { attempt in
            if attempt == 1 {
                latch.release()
                await written.wait()
            }
        }
        let racing = first
        async let a = racing.publish()
        await latch.wait()
        let b = try await publisher(one, to: root, shard: "1/2").publish()
        written.release()
        let published = try await a
        #expect(published.location == "file://" + root && published.warnings == [])
        let manifest = try PublishManifest.decoded(Array(try Data(contentsOf: URL(fileURLWithPath: root + "/manifest.json"))))
        #expect(manifest.shards == 2)
        #expect(manifest.entries.map { "\($0.shard) \($0.generation)" } == ["0 \(published.generation)", "1 \(b.generation)"])
        #expect(manifest.entries.map { $0.objects.compactMap(\.path) } == [
            ["generations/\(published.generation)/shard-0/manifest.json", "generations/\(published.generation)/shard-0/t_zero.sqlite"],
            ["generations/\(b.generation)/shard-1/manifest.json", "generations/\(b.generation)/shard-1/t_one.sqlite"],
        ])
        #expect(try problems(readingFolder: root) == [])
        // Nothing but the manifest, its lock and the generations' objects.
        #expect(entries(under: root) == [".lock", "generations",
                                         "generations/\(published.generation)", "generations/\(published.generation)/shard-0",
                                         "generations/\(published.generation)/shard-0/manifest.json",
                                         "generations/\(published.generation)/shard-0/t_zero.sqlite",
                                         "generations/\(b.generation)", "generations/\(b.generation)/shard-1",
                                         "generations/\(b.generation)/shard-1/manifest.json",
                                         "generations/\(b.generation)/shard-1/t_one.sqlite", "manifest.json"].sorted())
    }

    @Test("--keep 1 removes the older generations' files and folders, never the new one")
    func keep() async throws {
        let harness = try await outputFolder()
        let root = harness.folder + "/pub"
        let a = try await publisher(harness, to: root).publish()
        let b = try await publisher(harness, to: root).publish()
        let c = try await publisher(harness, to: root, keep: 1).publish()
        #expect(c.removed == [a.generation, b.generation])
        #expect(entries(under: root + "/generations") == [c.generation, c.generation + "/shard-0",
                                                          c.generation + "/shard-0/manifest.json",
                                                          c.generation + "/shard-0/t_item.sqlite"])
        let manifest = try PublishManifest.decoded(Array(try Data(contentsOf: URL(fileURLWithPath: root + "/manifest.json"))))
        #expect(manifest.entries.map(\.generation) == [c.generation])
        #expect(try problems(readingFolder: root) == [])
    }
}
