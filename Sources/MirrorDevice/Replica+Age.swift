public import Foundation
import MirrorModel

extension Replica {
    /// When the data of the generation the replica holds was read from the mirror: its
    /// snapshot manifest's `created_at` or, for a published prefix, the oldest of its
    /// shards' (each shard's snapshot manifest, `shards/<i>/manifest.json`). Not when the
    /// replica synced it: a generation published a day ago and synced now is a day old.
    /// Nil before the first sync, or when the generation's manifests give no time.
    public var createdAt: Date? {
        withGeneration { _, folder in Self.createdAt(of: folder) } ?? nil
    }

    /// The time of the generation in `folder`, from the manifests it holds.
    static func createdAt(of folder: String) -> Date? {
        func snapshotTime(_ path: String) -> Date? {
            guard let data = FileManager.default.contents(atPath: path) else { return nil }
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            return (try? decoder.decode(SnapshotManifest.self, from: data)).flatMap { Timestamp.date($0.createdAt) }
        }
        if let time = snapshotTime(folder + "/manifest.json") { return time }
        let shards = (try? FileManager.default.contentsOfDirectory(atPath: folder + "/shards")) ?? []
        return shards.compactMap { snapshotTime(folder + "/shards/" + $0 + "/manifest.json") }.min()
    }
}
