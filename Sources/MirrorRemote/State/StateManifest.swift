import Foundation
import MirrorExport
import MirrorFiles

/// What a shard's remote state holds (`shards/<I>-of-<N>/manifest.json`): each database
/// file of the shard, by its path in the output folder, with the object that holds its
/// last pushed copy, that copy's size and SHA-256, and the digest of its content without
/// the times things were last seen (`DatabaseContent`). `generation` counts the pushes; the
/// manifest is written last and only if unchanged since it was read, so it always names
/// whole objects, and one worker's push never silently replaces another's.
struct StateManifest: Codable, Equatable {
    struct Database: Codable, Equatable {
        var path: String
        var object: String
        var size: Int
        var sha256: String
        /// `DatabaseContent.digest`; nil in a manifest of a version that did not write it.
        var content: String?
    }

    var format = 1
    var shard: String
    var generation: Int
    var pushedAt: String
    var databases: [Database]

    enum CodingKeys: String, CodingKey {
        case format, shard, generation, databases
        case pushedAt = "pushed_at"
    }

    /// The layout's version this mirror reads and writes.
    static let currentFormat = 1

    /// The manifest `bytes` at `key`; one mirror cannot read is an error that says what is
    /// wrong with it, in plain words, and what to do.
    static func decode(_ bytes: [UInt8], location: String, key: String) throws(StateError) -> StateManifest {
        let prefix = "\(location): \(key) is not a state manifest mirror can read: "
        let manifest: StateManifest
        do {
            manifest = try JSONDecoder().decode(StateManifest.self, from: Data(bytes))
        } catch {
            throw StateError(prefix + DecodingProblem.describe(error)
                + "; remove \(key) to start the shard from the folder, or restore it")
        }
        guard manifest.format == currentFormat else {
            throw StateError(prefix + "its format is \(manifest.format), and this mirror reads format \(currentFormat): "
                + (manifest.format > currentFormat ? "a later mirror wrote it, use that one"
                    : "remove \(key) to start the shard from the folder, or restore it"))
        }
        return manifest
    }

    func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(self)) ?? Data())
    }
}

/// What the output folder last had in common with the remote state
/// (`.mirror-state/state.json`): the location, the shard, and the generation pulled or
/// pushed. A folder whose generation is the remote one's (or newer) keeps its files; one
/// whose generation is older, or that has no mark, takes the remote copies.
struct StateMark: Codable, Equatable {
    var location: String
    var shard: String
    var generation: Int

    static func read(_ path: String) -> StateMark? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try? JSONDecoder().decode(StateMark.self, from: data)
    }

    func write(to path: String) throws(StateError) {
        do {
            try WholeFile.write(try JSONEncoder().encode(self), to: path)
        } catch {
            throw StateError("cannot write \(path): \(error)")
        }
    }
}
