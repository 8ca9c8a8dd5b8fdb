/// The top-level `manifest.json` of a published prefix: for each shard that has published,
/// the generation a device should read and every object of it with its size and SHA-256, so
/// that a device reads this one object and then fetches immutable ones.
import Foundation

package struct PublishManifest: Codable, Sendable, Equatable {
    /// The layout's version: 1.
    package static let currentFormat = 1

    package var format: Int
    /// N: how many shards the publishes it names were split into.
    package var shards: Int
    /// UTC ISO 8601, when it was last written.
    package var updatedAt: String
    /// One per shard that has published for `shards`, by shard index.
    package var entries: [Entry]

    package init(format: Int, shards: Int, updatedAt: String, entries: [Entry]) {
        self.format = format
        self.shards = shards
        self.updatedAt = updatedAt
        self.entries = entries
    }

    package struct Entry: Codable, Sendable, Equatable {
        package var shard: Int
        /// The generation id: `20261127T101500Z-3fa4c2e1`.
        package var generation: String
        /// UTC ISO 8601, when the generation was started.
        package var publishedAt: String
        /// The key of the shard's snapshot manifest (also one of `objects`).
        package var manifest: String
        /// The same, relative to the prefix: `generations/G/shard-I/manifest.json`. Absent in
        /// an entry an earlier mirror wrote, until the manifest is next written.
        package var manifestPath: String? = nil
        /// Every object of the generation, by key.
        package var objects: [Object]

        package init(shard: Int, generation: String, publishedAt: String, manifest: String, manifestPath: String? = nil,
                     objects: [Object]) {
            self.shard = shard
            self.generation = generation
            self.publishedAt = publishedAt
            self.manifest = manifest
            self.manifestPath = manifestPath
            self.objects = objects
        }
    }

    package struct Object: Codable, Sendable, Equatable {
        /// The object's whole key in the bucket.
        package var key: String
        /// Its key relative to the prefix (`generations/G/shard-I/t_event.sqlite`): a device
        /// that read `BASE/manifest.json` finds the object at `BASE/<path>`, wherever BASE is.
        package var path: String? = nil
        package var bytes: Int
        package var sha256: String

        package init(key: String, path: String? = nil, bytes: Int, sha256: String) {
            self.key = key
            self.path = path
            self.bytes = bytes
            self.sha256 = sha256
        }
    }

    /// What a publish of `entry`, one of `shards` shards, makes of a manifest.
    package enum Merge: Sendable, Equatable {
        /// Write this one.
        case write(PublishManifest)
        /// The manifest already names this generation for the shard: nothing to write (an
        /// earlier attempt's write went through).
        case alreadyNamed
        /// The manifest names a later generation of the shard: it stays.
        case superseded(by: String)
    }

    /// `current` (nil when there is none) with `entry` in place of its shard's entry. A
    /// manifest of another shard count is replaced by one of `shards` holding `entry` alone:
    /// its entries split the tables another way, and a device must never combine the two.
    /// An entry is only ever replaced by a later generation, so the manifest never goes back.
    package static func merge(_ entry: Entry, shards: Int, into current: PublishManifest?, at time: String) -> Merge {
        guard let current, current.shards == shards else {
            return .write(PublishManifest(format: currentFormat, shards: shards, updatedAt: time, entries: [entry]))
        }
        var manifest = current
        if let index = manifest.entries.firstIndex(where: { $0.shard == entry.shard }) {
            let named = manifest.entries[index].generation
            if named == entry.generation { return .alreadyNamed }
            if named > entry.generation { return .superseded(by: named) }
            manifest.entries[index] = entry
        } else {
            manifest.entries.append(entry)
            manifest.entries.sort { $0.shard < $1.shard }
        }
        manifest.format = currentFormat
        manifest.updatedAt = time
        return .write(manifest)
    }

    /// The manifest with the paths an earlier mirror did not write put in: each key under
    /// `prefix` (none when empty) made relative to it.
    package func withPaths(under prefix: String) -> PublishManifest {
        func relative(_ key: String) -> String? {
            prefix.isEmpty ? key : key.hasPrefix(prefix + "/") ? String(key.dropFirst(prefix.count + 1)) : nil
        }
        var manifest = self
        for index in manifest.entries.indices {
            manifest.entries[index].manifestPath = manifest.entries[index].manifestPath ?? relative(manifest.entries[index].manifest)
            for object in manifest.entries[index].objects.indices {
                let key = manifest.entries[index].objects[object].key
                manifest.entries[index].objects[object].path = manifest.entries[index].objects[object].path ?? relative(key)
            }
        }
        return manifest
    }

    /// Pretty, sorted keys, snake case, a newline at the end: as `SnapshotManifest` is written.
    package func encoded() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return Array(try encoder.encode(self)) + [0x0A]
    }

    package static func decoded(_ bytes: [UInt8]) throws -> PublishManifest {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(PublishManifest.self, from: Data(bytes))
    }
}
