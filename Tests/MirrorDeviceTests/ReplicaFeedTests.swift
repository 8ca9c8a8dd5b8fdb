import Crypto
import Foundation
import GRDB
import MirrorDevice
import MirrorModel
@testable import MirrorReplica
import MirrorTestSupport
import Synchronization
import Testing

extension SnapshotSource {
    /// A snapshot whose `t_item` stands at `changes_through` 4 of feed `f`, as `mirror
    /// snapshot` records it in `_mirror_snapshot`.
    static func marked() async throws -> SnapshotSource {
        let source = try await make()
        try await DatabaseQueue(path: source.folder + "/t_item.sqlite").write { db in
            try db.execute(sql: """
                CREATE TABLE _mirror_snapshot (table_name TEXT NOT NULL PRIMARY KEY, records INTEGER NOT NULL,
                  changes_through INTEGER NOT NULL, feed TEXT NOT NULL, account TEXT, created_at TEXT NOT NULL,
                  format INTEGER NOT NULL, mirror_version TEXT NOT NULL);
                INSERT INTO _mirror_snapshot VALUES ('t_item', 12, 4, 'f', NULL, '2026-11-29T00:00:00.000Z', 1, 'test');
                """)
        }
        try source.writeManifest()
        return source
    }
}

/// A change feed at `/_mirror/changes/t_item` answering `answer` to a request with the
/// device's token (401 without it), and the targets it was asked for.
private final class Feed: Sendable {
    let asked = Mutex<[String]>([])
    let answer: Mutex<FixtureResponse>

    init(_ answer: FixtureResponse) { self.answer = Mutex(answer) }

    var handler: @Sendable (FixtureRequest) async -> FixtureResponse {
        { request in
            guard request.headers["authorization"] == "Bearer device-secret" else {
                return .json(#"{"error":"a token is needed"}"#, status: 401)
            }
            self.asked.withLock { $0.append(request.path + "?" + request.query) }
            return self.answer.withLock { $0 }
        }
    }
}

private func sha256(_ path: String) throws -> String {
    SHA256.hash(data: try Data(contentsOf: URL(fileURLWithPath: path))).map { String(format: "%02x", $0) }.joined()
}

@Suite("a replica kept up with serve's change feed", .timeLimit(.minutes(6)))
struct ReplicaFeedTests {
    @Test("the feed's changes go into a copy, in a new generation with its own SHA-256; the pulled database stays as it was")
    func applied() async throws {
        let source = try await SnapshotSource.marked()
        defer { try? FileManager.default.removeItem(atPath: source.root) }
        let folder = replicaFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let replica = try Replica(folder: folder)
        let synced = try await replica.sync(from: URL(fileURLWithPath: source.folder))
        let pulled = folder.path + "/generations/" + synced.generation
        let feed = Feed(.json(#"""
            {"changes":[
            {"seq":5,"op":"upsert","account":"","id":"2","record":{"id":2,"name":"item 2, renamed"}},
            {"seq":6,"op":"delete","account":"","id":"3"},
            {"seq":7,"op":"upsert","account":"","id":"13","record":{"id":13,"name":"item 13"}}],
            "feed":"f","changes_through":7}
            """#))
        try await FixtureServer.with(feed.handler) { server in
            let outcome = try await replica.catchUp(from: URL(string: server.base)!, token: "device-secret")
            #expect(outcome.changed && outcome.changes == 3 && outcome.fullSync == nil)
            #expect(replica.generation == outcome.generation)
            #expect(feed.asked.withLock { $0 } == ["/_mirror/changes/t_item?since=4&feed=f&limit=1000"])
            let caught = folder.path + "/generations/" + outcome.generation
            let rows = try await DatabaseQueue(path: caught + "/t_item.sqlite").read { db in
                try Row.fetchAll(db, sql: "SELECT id, record FROM t_item WHERE id IN ('1', '2', '3', '13') ORDER BY id")
                    .map { "\($0[0] as String) \($0[1] as String)" }
                + Row.fetchAll(db, sql: "SELECT changes_through, records FROM _mirror_snapshot").map { "\($0[0] as Int) \($0[1] as Int)" }
            }
            #expect(rows == [#"1 {"id":1,"name":"item 1"}"#, #"13 {"id":13,"name":"item 13"}"#,
                             #"2 {"id":2,"name":"item 2, renamed"}"#, "7 12"])
            // The record names the copy's own bytes; the file linked from the pulled generation is untouched.
            let record = try JSONDecoder().decode(GenerationRecord.self, from: Data(contentsOf: URL(fileURLWithPath: caught + "/.replica.json")))
            #expect(record.objects.first { $0.path == "t_item.sqlite" }?.sha256 == (try sha256(caught + "/t_item.sqlite")))
            #expect(try sha256(source.folder + "/t_item.sqlite") != (try sha256(caught + "/t_item.sqlite")))
            #expect(record.objects.first { $0.path == "files/3f/cover.jpg" }?.sha256 == (try sha256(source.folder + "/files/3f/cover.jpg")))
            #expect(!FileManager.default.fileExists(atPath: pulled))

            // Nothing after the mark: no new generation.
            feed.answer.withLock { $0 = .json(#"{"changes":[],"feed":"f","changes_through":7}"#) }
            let unchanged = try await replica.catchUp(from: URL(string: server.base)!, token: "device-secret")
            #expect(!unchanged.changed && unchanged.generation == outcome.generation && unchanged.changes == 0)
            #expect(feed.asked.withLock { $0 }.last == "/_mirror/changes/t_item?since=7&feed=f&limit=1000")
            #expect(names(in: folder.path + "/generations") == [outcome.generation])

            // The source's manifest unchanged: a sync keeps the caught-up generation.
            let kept = try await replica.sync(from: URL(fileURLWithPath: source.folder))
            #expect(!kept.changed && kept.manifestUnchanged && kept.generation == outcome.generation)

            // A later sync from the source fetches its database: the caught-up one is not its bytes.
            try Data("cover bytes, new".utf8).write(to: URL(fileURLWithPath: source.folder + "/files/3f/cover.jpg"))
            try source.writeManifest()
            let full = try await replica.sync(from: URL(fileURLWithPath: source.folder))
            #expect(full.changed && full.fetchedObjects == 2 && full.keptObjects == 0)
            #expect(try sha256(folder.path + "/current/t_item.sqlite") == (try sha256(source.folder + "/t_item.sqlite")))
        }
    }

    @Test("a mark the feed no longer holds: the source synced whole, or with none given, ReplicaError.behind with serve's reason; a refused token says its status")
    func behind() async throws {
        let source = try await SnapshotSource.marked()
        defer { try? FileManager.default.removeItem(atPath: source.root) }
        let folder = replicaFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let replica = try Replica(folder: folder)
        let synced = try await replica.sync(from: URL(fileURLWithPath: source.folder))
        let reason = "the change feed of 't_item' was compacted through seq 9: the changes since 4 are gone; take a new snapshot"
        let feed = Feed(.json(#"{"error":"\#(reason)"}"#, status: 410))
        try await FixtureServer.with(feed.handler) { server in
            let serve = URL(string: server.base)!
            await #expect(throws: ReplicaError.behind(reason)) {
                try await replica.catchUp(from: serve, token: "device-secret")
            }
            #expect(replica.generation == synced.generation)
            #expect(ReplicaError.behind(reason).description == reason
                + "; the replica keeps the generation it had: sync it from a snapshot or a published prefix")

            await #expect(throws: ReplicaError.source("GET \(server.base)/_mirror/changes/t_item?…: HTTP 401: a token is needed")) {
                try await replica.catchUp(from: serve, token: "another")
            }

            // With a source: synced whole from it (here the same snapshot, rewritten with a new file).
            try Data("cover bytes, new".utf8).write(to: URL(fileURLWithPath: source.folder + "/files/3f/cover.jpg"))
            try source.writeManifest()
            let outcome = try await replica.catchUp(from: serve, token: "device-secret", else: URL(fileURLWithPath: source.folder))
            #expect(outcome.changed && outcome.changes == 0 && outcome.fallbackReason == reason)
            #expect(outcome.fullSync?.fetchedObjects == 1 && outcome.fullSync?.keptObjects == 1)
            #expect(replica.generation == outcome.generation && outcome.generation != synced.generation)
        }
    }
}
