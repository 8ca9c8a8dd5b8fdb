import Crypto
import Foundation
import MirrorRemote
@testable import MirrorReplica
import MirrorTestSupport
import Testing

/// `mirror pull`'s HTTP source (AsyncHTTPClient) against a static file server on 127.0.0.1:
/// the same conditional manifest, Range resumes and refusals as the device's URLSession source.
@Suite("mirror pull's HTTP source", .timeLimit(.minutes(6)))
struct PullSourceTests {
    private func replica(_ folder: URL) throws -> Replica {
        try Replica(folder: folder, remote: { PullSource(base: $0) })
    }

    @Test("an unchanged pull makes one request and gets a 304; a changed database is fetched, the unchanged file linked")
    func unchangedAndChanged() async throws {
        let source = try await SnapshotSource.make()
        defer { try? FileManager.default.removeItem(atPath: source.root) }
        let folder = replicaFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await FixtureServer.with(staticFiles(source.folder)) { server in
            let replica = try replica(folder)
            let base = URL(string: server.base + "/")!
            let first = try await replica.sync(from: base)
            let database = try source.bytes("t_item.sqlite")
            #expect(first.changed && first.fetchedObjects == 2
                    && first.fetchedBytes == Int64(database.count + "cover bytes".utf8.count))
            #expect(server.requests.map(\.path).sorted() == ["/files/3f/cover.jpg", "/manifest.json", "/t_item.sqlite"])
            let generation = folder.path + "/generations/" + first.generation
            #expect(FileManager.default.contents(atPath: generation + "/t_item.sqlite") == database)
            #expect(FileManager.default.contents(atPath: generation + "/files/3f/cover.jpg") == Data("cover bytes".utf8))

            let asked = server.requests.count
            let second = try await replica.sync(from: base)
            #expect(second == SyncOutcome(generation: first.generation, changed: false, fetchedObjects: 0, fetchedBytes: 0,
                                          keptObjects: 2, manifestUnchanged: true))
            let after = server.requests.dropFirst(asked)
            #expect(after.map(\.path) == ["/manifest.json"])
            #expect(after.first?.headers["if-none-match"] == "\"" + sha256(try source.bytes("manifest.json")) + "\"")

            try FileManager.default.removeItem(atPath: source.folder + "/t_item.sqlite")
            let other = try await SnapshotSource.make(pages: 2)
            defer { try? FileManager.default.removeItem(atPath: other.root) }
            try FileManager.default.copyItem(atPath: other.folder + "/t_item.sqlite", toPath: source.folder + "/t_item.sqlite")
            try source.writeManifest()
            let before = server.requests.count
            let third = try await replica.sync(from: base)
            #expect(third.changed && third.fetchedObjects == 1 && third.keptObjects == 1 && third.generation != first.generation)
            #expect(server.requests.dropFirst(before).map(\.path) == ["/manifest.json", "/t_item.sqlite"])
            #expect(names(in: folder.path + "/generations") == [third.generation])
        }
    }

    @Test("an object half fetched before is asked for from where it ends, with Range; a server that sends it whole again is fine too")
    func resumes() async throws {
        let source = try await SnapshotSource.make()
        defer { try? FileManager.default.removeItem(atPath: source.root) }
        let database = try source.bytes("t_item.sqlite")
        let sha = sha256(database)
        let half = database.count / 2
        for honoursRange in [true, false] {
            let folder = replicaFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let replica = try replica(folder)
            try database.prefix(half).write(to: URL(fileURLWithPath: folder.path + "/partial/" + sha))
            try await FixtureServer.with(staticFiles(source.folder, honouringRange: honoursRange)) { server in
                let outcome = try await replica.sync(from: URL(string: server.base)!)
                #expect(outcome.changed && outcome.fetchedObjects == 2)
                #expect(outcome.fetchedBytes == Int64(database.count + "cover bytes".utf8.count))
                let asked = try #require(server.requests.first { $0.path == "/t_item.sqlite" })
                #expect(asked.headers["range"] == "bytes=\(half)-")
                #expect(FileManager.default.contents(atPath: folder.path + "/generations/\(outcome.generation)/t_item.sqlite") == database)
                #expect(names(in: folder.path + "/partial") == [])
            }
        }
    }

    @Test("a flipped byte is refused by name; an object the server does not have names its URL and status; the replica keeps its generation")
    func refusals() async throws {
        let source = try await SnapshotSource.make()
        defer { try? FileManager.default.removeItem(atPath: source.root) }
        let folder = replicaFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await FixtureServer.with(staticFiles(source.folder)) { server in
            let replica = try replica(folder)
            let base = URL(string: server.base + "/?X-Amz-Signature=secret")!
            let first = try await replica.sync(from: base)

            // A new manifest names other bytes; one of them changed on the way.
            try FileManager.default.removeItem(atPath: source.folder + "/files/3f/cover.jpg")
            try Data("other bytes".utf8).write(to: URL(fileURLWithPath: source.folder + "/files/3f/cover.jpg"))
            try source.writeManifest()
            var cover = try source.bytes("files/3f/cover.jpg")
            cover[0] ^= 0x01
            try cover.write(to: URL(fileURLWithPath: source.folder + "/files/3f/cover.jpg"))
            await #expect(throws: ReplicaError.refused(path: "files/3f/cover.jpg",
                                                       reason: "its SHA-256 is \(sha256(cover)), the manifest says \(sha256(Data("other bytes".utf8)))")) {
                try await replica.sync(from: base)
            }

            try FileManager.default.removeItem(atPath: source.folder + "/files/3f/cover.jpg")
            await #expect(throws: ReplicaError.source("GET \(server.base)/files/3f/cover.jpg?…: HTTP 404")) {
                try await replica.sync(from: base)
            }
            #expect(replica.generation == first.generation)
            #expect(names(in: folder.path + "/generations") == [first.generation])
        }
    }
}

private func sha256(_ data: Data) -> String {
    SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
}
