import Crypto
import Foundation
import MirrorModel

/// What a source's `manifest.json` names, as the objects a generation on the device holds:
/// each with the path it is fetched from (relative to the source), the path it has in the
/// generation, and the size and SHA-256 it must have. Read from a published prefix's
/// top-level manifest (each shard's generation, its objects put side by side) or from a
/// snapshot's own.
struct SyncPlan: Sendable, Equatable {
    struct Object: Codable, Sendable, Equatable {
        /// Relative to the source: `generations/…/shard-0/t_event.sqlite`, `t_event.sqlite`.
        var remote: String
        /// Relative to the generation's folder: `t_event.sqlite`, `files/3f/3fa4…c2.jpg`.
        var path: String
        var bytes: Int
        var sha256: String
    }

    var objects: [Object]

    /// The generation's id: the first 16 hex digits of the SHA-256 of its objects' paths and
    /// digests, so two manifests that name the same bytes name the same generation.
    var generation: String {
        var hash = SHA256()
        for object in objects.sorted(by: { $0.path < $1.path }) {
            hash.update(data: Data("\(object.path)\t\(object.sha256)\n".utf8))
        }
        return Hex.string(hash.finalize().prefix(8))
    }

    var bytes: Int { objects.reduce(0) { $0 + $1.bytes } }

    /// The plan of `manifest`, the bytes of a source's `manifest.json`.
    static func read(_ manifest: [UInt8]) throws(ReplicaError) -> SyncPlan {
        let members: [String: Any]
        do {
            members = try JSONSerialization.jsonObject(with: Data(manifest)) as? [String: Any] ?? [:]
        } catch {
            throw .manifest("manifest.json is not JSON")
        }
        do {
            if members["entries"] != nil {
                return try published(PublishManifest.decoded(manifest))
            }
            if members["databases"] != nil {
                let decoder = JSONDecoder()
                decoder.keyDecodingStrategy = .convertFromSnakeCase
                return try snapshot(decoder.decode(SnapshotManifest.self, from: Data(manifest)))
            }
        } catch let error as ReplicaError {
            throw error
        } catch {
            throw .manifest("manifest.json does not read as a published prefix's or a snapshot's (\(error))")
        }
        throw .manifest("manifest.json names neither a published prefix's generations (`entries`) nor a snapshot's databases")
    }

    /// A snapshot's objects sit where its manifest names them; the manifest itself is
    /// written to the generation by the sync, as it was read.
    static func snapshot(_ manifest: SnapshotManifest) throws(ReplicaError) -> SyncPlan {
        let objects = manifest.databases.map { Object(remote: $0.path, path: $0.path, bytes: $0.bytes, sha256: $0.sha256) }
            + manifest.files.map { Object(remote: $0.path, path: $0.path, bytes: $0.bytes, sha256: $0.sha256) }
        return try checked(objects)
    }

    /// Each shard's generation is `generations/<id>/shard-<i>/`: its databases and files go
    /// to the generation's top as a snapshot has them, its manifest to `shards/<i>/`.
    static func published(_ manifest: PublishManifest) throws(ReplicaError) -> SyncPlan {
        var objects: [Object] = []
        for entry in manifest.entries {
            for object in entry.objects {
                guard let remote = object.path ?? relativePath(object.key) else {
                    throw .manifest("shard \(entry.shard)'s object \(object.key) is not under generations/")
                }
                let parts = remote.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
                guard parts.count == 4, parts[2].hasPrefix("shard-") else {
                    throw .manifest("shard \(entry.shard)'s object \(object.key) is not in a shard's folder")
                }
                let inShard = String(parts[3])
                let path = inShard == "manifest.json" ? "shards/\(entry.shard)/manifest.json" : inShard
                objects.append(Object(remote: remote, path: path, bytes: object.bytes, sha256: object.sha256))
            }
        }
        // Shards hold different tables; a file two shards' records name is the same file.
        var seen: [String: Object] = [:]
        var unique: [Object] = []
        for object in objects {
            if let earlier = seen[object.path] {
                guard earlier.sha256 == object.sha256 else {
                    throw .manifest("two shards name \(object.path) with different contents")
                }
                continue
            }
            seen[object.path] = object
            unique.append(object)
        }
        return try checked(unique)
    }

    /// A key's path under the prefix, for a manifest that does not name it (`path`): from
    /// its `generations/` folder on.
    static func relativePath(_ key: String) -> String? {
        if key.hasPrefix("generations/") { return key }
        guard let range = key.range(of: "/generations/") else { return nil }
        return String(key[key.index(after: range.lowerBound)...])
    }

    /// Refuses a path that would leave the generation's folder, or that the sync keeps for itself.
    private static func checked(_ objects: [Object]) throws(ReplicaError) -> SyncPlan {
        for object in objects {
            for path in [object.path, object.remote] {
                let parts = path.split(separator: "/", omittingEmptySubsequences: false)
                guard !path.isEmpty, !path.hasPrefix("/"), !parts.contains(where: { $0 == ".." || $0 == "." || $0.isEmpty }) else {
                    throw .manifest("the manifest names \(path), which is not a plain relative path")
                }
            }
            guard object.path != Generation.recordName, object.path != Generation.readersName, object.path != "manifest.json" else {
                throw .manifest("the manifest names \(object.path), a name the replica keeps for itself")
            }
            guard object.bytes >= 0, object.sha256.count == 64 else {
                throw .manifest("the manifest gives \(object.path) no size or no SHA-256")
            }
        }
        return SyncPlan(objects: objects)
    }
}
