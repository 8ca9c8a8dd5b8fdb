public import Foundation
import Crypto
import MirrorFiles
import MirrorModel
import MirrorStore

extension Replica {
    /// Changes asked for at once: `mirror serve` answers up to this many, and the mark to ask
    /// from next; a full answer is followed by another.
    static let changesAtOnce = 1000

    /// The largest answer of the feed read.
    static let feedAnswerLimit = 256 << 20

    /// Brings the replica up to date through `mirror serve`'s change feed, without fetching
    /// whole databases: for each record table of the generation it holds, the changes since
    /// its mark (`_mirror_snapshot.changes_through`) are asked of
    /// `<serve>/_mirror/changes/<table>`, and applied to a copy of its database as the SQL
    /// of docs/devices.md applies them (upserts, `parent_id` in a child job's table,
    /// deletions, the mark moved on), in a new generation that replaces the old one in one
    /// rename, as a sync does. Readers of the old generation keep reading it whole.
    ///
    /// An unchanged feed makes no new generation. The replica's stored pages are not in the
    /// feed: its page URLs are answered from the pages of its last full sync.
    ///
    /// When the feed no longer holds a mark (compacted past it, or the database was made
    /// again since), the replica is synced whole from `snapshot` (a published prefix or a
    /// snapshot folder, as `sync(from:)` takes it); without one, it throws
    /// `ReplicaError.behind`.
    ///
    /// - Parameters:
    ///   - serve: `mirror serve`'s address, `http(s)://host:port`.
    ///   - token: the device's token, sent as `Authorization: Bearer` (`serve --device-tokens`).
    ///   - snapshot: where to sync from whole when the feed cannot serve the replica's marks.
    @discardableResult
    public func catchUp(from serve: URL, token: String? = nil, else snapshot: URL? = nil) async throws -> CatchUpOutcome {
        try await catchUp(serve: serve, token: token, snapshot: snapshot)
    }

    func catchUp(serve: URL, token: String?, snapshot: URL?) async throws(ReplicaError) -> CatchUpOutcome {
        guard ["http", "https"].contains(serve.scheme?.lowercased() ?? "") else {
            throw .source("\(ReplicaError.shown(serve)): the change feed is read from mirror serve's http:// or https:// address")
        }
        let source = remote(serve)
        let reached: FeedReach
        do throws(ReplicaError) {
            reached = try await catchUp(through: source, serve: serve, token: token)
            await source.close()
        } catch {
            await source.close()
            throw error
        }
        switch reached {
        case let .applied(outcome):
            return outcome
        case let .unreachable(reason):
            guard let snapshot else { throw .behind(reason) }
            let synced = try await sync(from: snapshot, progress: nil)
            return CatchUpOutcome(generation: synced.generation, changed: synced.changed, changes: 0,
                                  fullSync: synced, fallbackReason: reason)
        }
    }

    /// What asking the feed came to: applied (or nothing to apply), or a mark it cannot serve.
    private enum FeedReach {
        case applied(CatchUpOutcome)
        case unreachable(String)
    }

    /// One table's changes since its mark, in the answers they came in.
    private struct TableChanges {
        let table: String
        var bodies: [[UInt8]] = []
        var changes = 0
    }

    private func catchUp(through source: any SyncSource, serve: URL, token: String?) async throws(ReplicaError) -> FeedReach {
        try layout.prepare()
        let lock = try await syncLock()
        defer { try? FileSystem.close(lock) }
        guard let held = layout.current(), let record = layout.record(of: held) else {
            return .unreachable("the replica holds no generation yet")
        }
        let heldFolder = layout.folder(of: held)
        // Each database of the generation: the changes of each of its record tables.
        var changed: [(object: SyncPlan.Object, tables: [TableChanges])] = []
        var total = 0
        for object in record.objects where !object.path.contains("/") && object.path.hasSuffix(".sqlite") {
            let marks: [SnapshotFeed.Mark]
            do {
                marks = try SnapshotFeed.marks(of: heldFolder + "/" + object.path)
            } catch {
                throw .folder("cannot read generation \(held)'s \(object.path): \(error)")
            }
            var tables: [TableChanges] = []
            for mark in marks {
                var changes = TableChanges(table: mark.table)
                var since = mark.changesThrough
                while true {
                    if Task.isCancelled { throw .cancelled }
                    let url = Self.feedURL(serve, table: mark.table, since: since, feed: mark.feed, account: mark.account)
                    let (status, body) = try await source.get(url, token: token, limit: Self.feedAnswerLimit)
                    if status == 410 { return .unreachable(Self.reason(body) ?? "GET \(ReplicaError.shown(url)): HTTP 410") }
                    guard status == 200 else {
                        throw .source("GET \(ReplicaError.shown(url)): HTTP \(status)" + (Self.reason(body).map { ": \($0)" } ?? ""))
                    }
                    let page: SnapshotFeed.Page
                    do {
                        page = try SnapshotFeed.page(body)
                    } catch {
                        throw .source("GET \(ReplicaError.shown(url)): \(error)")
                    }
                    guard page.feed == mark.feed else {
                        return .unreachable("the change feed of '\(mark.table)' is feed \(page.feed), not \(mark.feed)")
                    }
                    if page.changes > 0 { changes.bodies.append(body) }
                    changes.changes += page.changes
                    since = page.changesThrough
                    if page.changes < Self.changesAtOnce { break }
                }
                tables.append(changes)
            }
            let count = tables.reduce(0) { $0 + $1.changes }
            if count > 0 { changed.append((object, tables)) }
            total += count
        }
        guard total > 0 else {
            // As a sync finds the manifest unchanged: generations let go of meanwhile are removed.
            layout.removeOld(keeping: held, wanted: [])
            return .applied(CatchUpOutcome(generation: held, changed: false, changes: 0, fullSync: nil, fallbackReason: nil))
        }
        let generation = try apply(changed, to: held, record: record)
        return .applied(CatchUpOutcome(generation: generation, changed: true, changes: total, fullSync: nil, fallbackReason: nil))
    }

    /// Makes the new generation: the changed databases copied from the held one and the
    /// changes applied to the copies, everything else linked; flushed, renamed into place,
    /// and `current` pointed at it in one rename.
    private func apply(_ changed: [(object: SyncPlan.Object, tables: [TableChanges])], to held: String,
                       record: GenerationRecord) throws(ReplicaError) -> String {
        let heldFolder = layout.folder(of: held)
        let building = layout.generations + "/feed-" + UUID().uuidString.lowercased() + ".partial"
        do {
            try FileManager.default.createDirectory(atPath: building, withIntermediateDirectories: true)
        } catch {
            throw .folder("cannot make \(building): \(SystemError.reason(error))")
        }
        do throws(ReplicaError) {
            var objects: [SyncPlan.Object] = []
            var folders: Set<String> = [building]
            for var object in record.objects {
                let target = building + "/" + object.path
                let parent = (target as NSString).deletingLastPathComponent
                folders.insert(parent)
                do {
                    try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
                } catch {
                    throw ReplicaError.folder("cannot make \(parent): \(SystemError.reason(error))")
                }
                guard let tables = changed.first(where: { $0.object.path == object.path })?.tables else {
                    do throws(FileError) {
                        try FileSystem.link(heldFolder + "/" + object.path, at: target)
                    } catch {
                        throw ReplicaError.folder("cannot link \(object.path) into the new generation: \(SystemError.reason(error))")
                    }
                    objects.append(object)
                    continue
                }
                // A copy, never a link: the held generation's file stays as it was read.
                do {
                    try FileManager.default.copyItem(atPath: heldFolder + "/" + object.path, toPath: target)
                    try SnapshotFeed.apply(tables.map { ($0.table, $0.bodies) }, to: target)
                } catch {
                    throw ReplicaError.folder("cannot apply the change feed to \(object.path): \(error)")
                }
                let (bytes, sha256) = try Self.digest(target)
                object.bytes = bytes
                object.sha256 = sha256
                objects.append(object)
            }
            // The source's manifest, as the held generation read it.
            do throws(FileError) {
                try FileSystem.link(heldFolder + "/manifest.json", at: building + "/manifest.json")
            } catch {
                throw ReplicaError.folder("cannot link manifest.json into the new generation: \(SystemError.reason(error))")
            }
            do {
                let readers = try FileSystem.createOrEmpty(building + "/" + Generation.readersName)
                try FileSystem.close(readers)
            } catch {
                throw ReplicaError.folder("cannot write into \(building): \(SystemError.reason(error))")
            }
            // The same source and manifest ETag: a later sync asks for the manifest as before,
            // and links none of the changed databases, whose SHA-256 is their own.
            try layout.write(GenerationRecord(source: record.source, etag: record.etag, objects: objects), into: building)
            for folder in folders { ReplicaFolder.flush(folder: folder) }
            let generation = SyncPlan(objects: objects).generation
            let final = layout.folder(of: generation)
            try? FileManager.default.removeItem(atPath: final)
            do throws(FileError) {
                try FileSystem.rename(building, to: final)
            } catch {
                throw ReplicaError.folder("cannot rename \(building) to \(final): \(SystemError.reason(error))")
            }
            ReplicaFolder.flush(folder: layout.generations)
            try layout.makeCurrent(generation)
            layout.removeOld(keeping: generation, wanted: [])
            return generation
        } catch {
            try? FileManager.default.removeItem(atPath: building)
            throw error
        }
    }

    /// The size and SHA-256 of `path`, flushed to disk first.
    private static func digest(_ path: String) throws(ReplicaError) -> (Int, String) {
        do throws(FileError) {
            let descriptor = try FileSystem.openForReading(path)
            defer { try? FileSystem.close(descriptor) }
            try FileSystem.flush(descriptor)
            let size = try FileSystem.size(descriptor)
            return (size, Hex.string(try hashed(descriptor, upTo: size).finalize()))
        } catch {
            throw .folder("cannot read \(path): \(SystemError.reason(error))")
        }
    }

    /// `<serve>/_mirror/changes/<table>?since=…&feed=…[&account=…]&limit=…`.
    static func feedURL(_ serve: URL, table: String, since: Int, feed: String, account: String?) -> URL {
        let url = objectURL("_mirror/changes/" + table, under: serve)
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        var items = [URLQueryItem(name: "since", value: String(since)), URLQueryItem(name: "feed", value: feed)]
        if let account { items.append(URLQueryItem(name: "account", value: account)) }
        items.append(URLQueryItem(name: "limit", value: String(changesAtOnce)))
        parts.queryItems = (parts.queryItems ?? []) + items
        parts.percentEncodedQuery = parts.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        return parts.url ?? url
    }

    /// The `error` of serve's JSON answer.
    static func reason(_ body: [UInt8]) -> String? {
        let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
        return object?["error"] as? String
    }
}

/// What catching up with the change feed did.
public struct CatchUpOutcome: Sendable, Equatable {
    /// The generation the replica holds now.
    public let generation: String
    /// Whether it is another generation than the one the replica held before.
    public let changed: Bool
    /// Changes applied (one per changed record), 0 after a full sync.
    public let changes: Int
    /// The full sync made when the feed no longer held the replica's marks; nil otherwise.
    public let fullSync: SyncOutcome?
    /// Why the feed could not be used, as serve said it, when the replica was synced whole.
    public let fallbackReason: String?
}
