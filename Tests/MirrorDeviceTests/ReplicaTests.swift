import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import GRDB
import MirrorDevice
import MirrorModel
import MirrorFiles
@testable import MirrorReplica
import MirrorReplay
import MirrorTestSupport
import Synchronization
import Testing

extension SnapshotSource {
    /// What `mirror serve` would answer for `target` from the output folder the snapshot was made of.
    func served(_ target: String) throws -> [UInt8] {
        let pages = ReplayedPages(output: output, cache: PageCache(limit: 0))
        switch try pages.answer(method: "GET", target: target, body: [], origin: "https://api.example.com", ifNoneMatch: nil) {
        case let .kept(entry, _): return (entry.answer as? KeptBytes)?.body ?? []
        case let .whole(_, _, body): return body
        case .streamed: return []
        }
    }
}

@Suite("a replica on the device", .timeLimit(.minutes(6)))
struct ReplicaTests {
    @Test("a sync from a snapshot folder holds its objects whole, and answers each page as serve does, naming the generation")
    func syncFromFolder() async throws {
        let source = try await SnapshotSource.make()
        defer { try? FileManager.default.removeItem(atPath: source.root) }
        let folder = replicaFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let replica = try Replica(folder: folder)
        #expect(replica.generation == nil)
        #expect(try replica.response(for: URLRequest(url: URL(string: "https://api.example.com/items?page=1")!)) == nil)

        let outcome = try await replica.sync(from: URL(fileURLWithPath: source.folder))
        #expect(outcome.changed && outcome.fetchedObjects == 2 && outcome.keptObjects == 0)
        #expect(outcome.fetchedBytes == Int64(try source.bytes("t_item.sqlite").count + source.bytes("files/3f/cover.jpg").count))
        #expect(replica.generation == outcome.generation)
        let generation = folder.path + "/generations/" + outcome.generation
        #expect(FileManager.default.contents(atPath: generation + "/t_item.sqlite") == (try source.bytes("t_item.sqlite")))
        #expect(FileManager.default.contents(atPath: generation + "/files/3f/cover.jpg") == Data("cover bytes".utf8))
        #expect(names(in: folder.path + "/generations") == [outcome.generation])
        #expect(names(in: folder.path + "/partial") == [])

        for page in 1...3 {
            let answer = try #require(try replica.response(for: URLRequest(url: URL(string: "https://api.example.com/items?page=\(page)")!)))
            #expect(answer.status == 200)
            #expect(Array(answer.body) == (try source.served("/items?page=\(page)")), "page \(page)")
            #expect(answer.header("X-Mirror-Replica") == outcome.generation)
            #expect(answer.header("ETag")?.hasPrefix("\"") == true)
            // Asked again with its ETag: a 304, no body.
            var again = URLRequest(url: URL(string: "https://api.example.com/items?page=\(page)")!)
            again.setValue(answer.header("ETag"), forHTTPHeaderField: "If-None-Match")
            let notModified = try #require(try replica.response(for: again))
            #expect(notModified.status == 304 && notModified.body.isEmpty)
        }
        let first = try #require(try replica.response(for: URLRequest(url: URL(string: "https://api.example.com/items?page=1")!)))
        #expect(String(decoding: first.body, as: UTF8.self)
            == #"{"data":[{"id":1,"name":"item 1"},{"id":2,"name":"item 2"},{"id":3,"name":"item 3"},{"id":4,"name":"item 4"}],"next":"https://api.example.com/items?page=2"}"#)
        #expect(try replica.response(for: URLRequest(url: URL(string: "https://api.example.com/items?page=9")!)) == nil)
    }

    @Test("over HTTP: an unchanged sync makes one request and gets a 304; a changed database is fetched, the unchanged file linked")
    func syncOverHTTP() async throws {
        let source = try await SnapshotSource.make()
        defer { try? FileManager.default.removeItem(atPath: source.root) }
        let folder = replicaFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await FixtureServer.with(staticFiles(source.folder)) { server in
            let replica = try Replica(folder: folder)
            let base = URL(string: server.base + "/")!
            let first = try await replica.sync(from: base)
            #expect(first.changed && first.fetchedObjects == 2)
            #expect(server.requests.map(\.path) .sorted() == ["/files/3f/cover.jpg", "/manifest.json", "/t_item.sqlite"])

            let asked = server.requests.count
            let second = try await replica.sync(from: base)
            #expect(second == SyncOutcome(generation: first.generation, changed: false, fetchedObjects: 0, fetchedBytes: 0,
                                          keptObjects: 2, manifestUnchanged: true))
            let after = server.requests.dropFirst(asked)
            #expect(after.map(\.path) == ["/manifest.json"])
            #expect(after.first?.headers["if-none-match"] != nil)

            // A new database: only it is fetched; the file is the old generation's, linked.
            try FileManager.default.removeItem(atPath: source.folder + "/t_item.sqlite")
            let other = try await SnapshotSource.make(pages: 2)
            defer { try? FileManager.default.removeItem(atPath: other.root) }
            try FileManager.default.copyItem(atPath: other.folder + "/t_item.sqlite", toPath: source.folder + "/t_item.sqlite")
            try source.writeManifest()
            let before = server.requests.count
            let third = try await replica.sync(from: base)
            #expect(third.changed && third.fetchedObjects == 1 && third.keptObjects == 1 && third.generation != first.generation)
            #expect(server.requests.dropFirst(before).map(\.path) == ["/manifest.json", "/t_item.sqlite"])
            #expect(try replica.response(for: URLRequest(url: URL(string: "https://api.example.com/items?page=3")!)) == nil)
            #expect(try replica.response(for: URLRequest(url: URL(string: "https://api.example.com/items?page=2")!))?.status == 200)
            #expect(names(in: folder.path + "/generations") == [third.generation])
        }
    }

    @Test("the sync lock held a moment by another descriptor (a process being started holds a copy) is waited for; held on, it is another sync under way")
    func lockHeldAMoment() async throws {
        let source = try await SnapshotSource.make()
        defer { try? FileManager.default.removeItem(atPath: source.root) }
        let folder = replicaFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let replica = try Replica(folder: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let lockPath = folder.path + "/.sync.lock"
        let other = try FileSystem.openLockFile(lockPath, followingLinks: false)
        try FileSystem.lock(other, waiting: false)
        // Let go on a thread of its own, whether or not the tasks of other tests keep the
        // cooperative pool busy.
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) {
            try? FileSystem.close(other)
        }
        let outcome = try await replica.sync(from: URL(fileURLWithPath: source.folder))
        #expect(outcome.changed && outcome.fetchedObjects == 2)

        let holder = try FileSystem.openLockFile(lockPath, followingLinks: false)
        defer { try? FileSystem.close(holder) }
        // Waited for: a process another test is starting may hold a copy of the sync's own
        // descriptor, taken before the sync closed it, until it runs its program.
        try FileSystem.lock(holder, waiting: true)
        await #expect(throws: ReplicaError.busy(folder.path)) {
            try await replica.sync(from: URL(fileURLWithPath: source.folder))
        }
    }

    @Test("a flipped byte in a database: it is refused by name, the replica keeps its generation, nothing half made is left")
    func flippedByte() async throws {
        let source = try await SnapshotSource.make()
        defer { try? FileManager.default.removeItem(atPath: source.root) }
        let folder = replicaFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let replica = try Replica(folder: folder)
        let first = try await replica.sync(from: URL(fileURLWithPath: source.folder))

        // A new manifest, then one byte of the database it names changed on the way.
        let other = try await SnapshotSource.make(pages: 2)
        defer { try? FileManager.default.removeItem(atPath: other.root) }
        try FileManager.default.removeItem(atPath: source.folder + "/t_item.sqlite")
        try FileManager.default.copyItem(atPath: other.folder + "/t_item.sqlite", toPath: source.folder + "/t_item.sqlite")
        try source.writeManifest()
        var bytes = try source.bytes("t_item.sqlite")
        bytes[bytes.count / 2] ^= 0x01
        try bytes.write(to: URL(fileURLWithPath: source.folder + "/t_item.sqlite"))
        let manifest = try JSONSerialization.jsonObject(with: source.bytes("manifest.json")) as? [String: Any]
        let named = try #require(((manifest?["databases"] as? [[String: Any]])?.first?["sha256"]) as? String)
        let got = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()

        await #expect(throws: ReplicaError.refused(path: "t_item.sqlite", reason: "its SHA-256 is \(got), the manifest says \(named)")) {
            try await replica.sync(from: URL(fileURLWithPath: source.folder))
        }
        #expect("\(ReplicaError.refused(path: "t_item.sqlite", reason: "x"))" == "t_item.sqlite: x: refused; the replica keeps the generation it had")
        #expect(replica.generation == first.generation)
        #expect(names(in: folder.path + "/generations") == [first.generation])
        #expect(names(in: folder.path + "/partial") == [])
        #expect(try replica.response(for: URLRequest(url: URL(string: "https://api.example.com/items?page=3")!))?.status == 200)
    }

    @Test("two objects with the same bytes at two paths are fetched once, and both are in the generation")
    func sameBytesTwice() async throws {
        let source = try await SnapshotSource.make()
        defer { try? FileManager.default.removeItem(atPath: source.root) }
        try FileManager.default.createDirectory(atPath: source.folder + "/files/4a", withIntermediateDirectories: true)
        try source.bytes("files/3f/cover.jpg").write(to: URL(fileURLWithPath: source.folder + "/files/4a/copy.jpg"))
        var manifest = try JSONSerialization.jsonObject(with: source.bytes("manifest.json")) as? [String: Any] ?? [:]
        var files = manifest["files"] as? [[String: Any]] ?? []
        var copy = try #require(files.first)
        copy["path"] = "files/4a/copy.jpg"
        files.append(copy)
        manifest["files"] = files
        try JSONSerialization.data(withJSONObject: manifest).write(to: URL(fileURLWithPath: source.folder + "/manifest.json"))
        let folder = replicaFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await FixtureServer.with(staticFiles(source.folder)) { server in
            let outcome = try await Replica(folder: folder).sync(from: URL(string: server.base)!)
            #expect(outcome.changed && outcome.fetchedObjects == 2 && outcome.keptObjects == 1)
            #expect(server.requests.map(\.path).sorted() == ["/files/3f/cover.jpg", "/manifest.json", "/t_item.sqlite"])
            let generation = folder.path + "/generations/" + outcome.generation
            for path in ["files/3f/cover.jpg", "files/4a/copy.jpg"] {
                #expect(FileManager.default.contents(atPath: generation + "/" + path) == Data("cover bytes".utf8), "\(path)")
            }
        }
    }

    @Test("an object a sync had half fetched is asked for from where it ends, with Range, and checked whole")
    func resumes() async throws {
        let source = try await SnapshotSource.make()
        defer { try? FileManager.default.removeItem(atPath: source.root) }
        let folder = replicaFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = try source.bytes("t_item.sqlite")
        let sha = SHA256.hash(data: database).map { String(format: "%02x", $0) }.joined()
        let replica = try Replica(folder: folder)
        let half = database.count / 2
        try database.prefix(half).write(to: URL(fileURLWithPath: folder.path + "/partial/" + sha))
        try await FixtureServer.with(staticFiles(source.folder)) { server in
            let outcome = try await replica.sync(from: URL(string: server.base)!)
            #expect(outcome.changed && outcome.fetchedObjects == 2)
            let asked = try #require(server.requests.first { $0.path == "/t_item.sqlite" })
            #expect(asked.headers["range"] == "bytes=\(half)-")
            #expect(FileManager.default.contents(atPath: folder.path + "/generations/\(outcome.generation)/t_item.sqlite") == database)
        }
    }

    @Test("progress counts the bytes to fetch up to their total, then the outcome; a generation a reader holds stays until it lets go")
    func progressAndReaders() async throws {
        let source = try await SnapshotSource.make()
        defer { try? FileManager.default.removeItem(atPath: source.root) }
        let folder = replicaFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let replica = try Replica(folder: folder)
        var events: [SyncEvent] = []
        for try await event in replica.syncing(from: URL(fileURLWithPath: source.folder)) { events.append(event) }
        guard case let .finished(outcome) = events.last else { Issue.record("no outcome: \(events)"); return }
        let total = Int64(try source.bytes("t_item.sqlite").count + source.bytes("files/3f/cover.jpg").count)
        let progress = events.compactMap { if case let .progress(p) = $0 { p } else { nil } }
        #expect(progress.first == SyncProgress(bytesDone: 0, bytesTotal: total, objectsDone: 0, objectsTotal: 2))
        #expect(progress.last == SyncProgress(bytesDone: total, bytesTotal: total, objectsDone: 2, objectsTotal: 2))
        #expect(zip(progress, progress.dropFirst()).allSatisfy { $0.bytesDone <= $1.bytesDone })

        // Another app process reads the first generation while the next sync replaces it.
        let reader = try Replica(folder: folder)
        #expect(try reader.response(for: URLRequest(url: URL(string: "https://api.example.com/items?page=3")!))?.status == 200)
        let other = try await SnapshotSource.make(pages: 2)
        defer { try? FileManager.default.removeItem(atPath: other.root) }
        let second = try await replica.sync(from: URL(fileURLWithPath: other.folder))
        #expect(names(in: folder.path + "/generations") == [outcome.generation, second.generation].sorted())
        // The reader moves to the new generation at its next answer, and lets the old one go.
        #expect(try reader.response(for: URLRequest(url: URL(string: "https://api.example.com/items?page=3")!)) == nil)
        #expect(names(in: folder.path + "/generations") == [second.generation])
        _ = try await replica.sync(from: URL(fileURLWithPath: other.folder))
        #expect(names(in: folder.path + "/generations") == [second.generation])
    }
}
