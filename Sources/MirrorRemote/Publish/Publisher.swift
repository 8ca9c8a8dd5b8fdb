/// Publishes the output folder for devices (`mirror publish`), to S3 or to a folder (the
/// two `ObjectStore`s): a snapshot of it is uploaded as a new generation of one shard,
/// `generations/G/shard-I/` (its manifest.json last), then named in the top-level
/// `manifest.json` by a conditional write that is read again and retried when another writer
/// got there first (S3's `If-Match`; in a folder, a check and a rename under an `flock`);
/// then the shard's generations beyond the newest `keep` are removed, never one that
/// manifest names.
import Foundation
package import Logging
import MirrorExport
import MirrorHTTP
package import MirrorJobFile
import MirrorModel
import MirrorStore
import NIOPosix
import ServiceLifecycle

package struct Publisher: Sendable {
    package struct Options: Sendable {
        /// The output folder.
        package var output: String
        /// Which shard's part this is; 0/1 when the mirror is not sharded.
        package var shard: ShardPlan.Shard
        /// Complete generations of the shard to keep, the new one included; at least 1.
        package var keep = 3
        /// Record tables to include; all when empty.
        package var tables: [String] = []
        package var account: String?
        /// Include the downloaded files the records name.
        package var withFiles = false
        /// Include the stored pages of the tables, which `mirror serve` answers the API's
        /// URLs from (`mirror snapshot --with-pages`).
        package var withPages = true
        package var mirrorVersion: String

        package init(output: String, shard: ShardPlan.Shard, mirrorVersion: String) {
            self.output = output
            self.shard = shard
            self.mirrorVersion = mirrorVersion
        }
    }

    package struct Failure: Error, Sendable, CustomStringConvertible {
        package let description: String
    }

    /// A generation uploaded and named.
    package struct Published: Sendable {
        /// `s3://bucket/prefix`, `file:///folder`.
        package let location: String
        package let generation: String
        /// Objects uploaded and their bytes, the shard's manifest included.
        package let objects: Int
        package let bytes: Int
        /// Older generations of the shard removed, oldest first.
        package let removed: [String]
        /// The snapshot's (files left out), and the top-level manifest's (replaced for another
        /// shard count, or already naming a later generation).
        package let warnings: [String]
    }

    /// The top-level manifest's name under the prefix, and the shard manifest's in a generation.
    static let manifestName = "manifest.json"
    /// Objects uploaded or removed at once.
    static let width = 4
    /// Reads and conditional writes of the top-level manifest before giving up.
    static let manifestAttempts = 10
    /// How long a temporary file of a folder's write stays unwritten to before it is taken
    /// for one a killed publish left: a write under way writes to it as it goes.
    static let leftoverAge = Duration.seconds(3600)

    package let options: Options
    let store: any ObjectStore
    /// What the store's keys are under: the bucket's prefix; none in a folder.
    let prefix: String
    let logger: Logger
    /// Runs between reading the top-level manifest and writing it, with the attempt's number.
    var beforeManifestWrite: @Sendable (Int) async throws -> Void = { _ in }
    /// Runs after each object of the generation is uploaded, with its key.
    var afterUpload: @Sendable (String) async throws -> Void = { _ in }

    /// Publishes to the bucket and prefix of `client`.
    package init(options: Options, client: S3Client, logger: Logger) {
        let configuration = client.configuration
        let location = "s3://\(configuration.bucket)" + (configuration.prefix.isEmpty ? "" : "/" + configuration.prefix)
        self.init(options: options, store: S3ObjectStore(client, location: location), prefix: configuration.prefix,
                  logger: logger)
    }

    /// Publishes to the folder `root` (`file:///srv/pub/events`).
    package init(options: Options, folder root: String, logger: Logger) {
        self.init(options: options, store: FolderObjectStore(root: root, location: "file://" + root), prefix: "",
                  logger: logger)
    }

    init(options: Options, store: any ObjectStore, prefix: String, logger: Logger) {
        precondition(options.keep >= 1, "--keep is checked where it is read")
        self.options = options
        self.store = store
        self.prefix = prefix
        self.logger = logger
    }

    /// `s3://bucket/prefix` or `file:///folder`, as errors and the summary name it.
    var location: String { store.location }

    /// The top-level manifest, as errors name it.
    var manifestPlace: String { location + "/" + Self.manifestName }

    /// An object's whole key: in the bucket, its path under the prefix; in a folder, its path.
    func key(_ path: String) -> String { prefix.isEmpty ? path : prefix + "/" + path }

    /// Why there is nothing to publish, when there is not: the output folder of one shard of
    /// several holds no database. A shard with no jobs has none (its run makes no output
    /// folder); its publish is then a success that publishes nothing, so that its pod does
    /// not fail. A whole mirror (shard 0 of 1) that holds none is still an error (`publish()`).
    package var nothingToPublish: String? {
        guard options.shard.count > 1, RecordReader.databases(in: options.output).isEmpty else { return nil }
        return "shard \(options.shard): '\(options.output)' holds no databases (a shard with no jobs has none): "
            + "nothing published to \(location)"
    }

    /// Snapshots, uploads, names and prunes. A stop (`GracefulStop`) cuts the snapshot and
    /// the upload; once every object is up, the manifest is moved and old generations are
    /// removed before it returns.
    package func publish() async throws -> Published {
        let started = Date()
        let generation = GenerationID.make(at: started)
        let work = try PublishFolder(output: options.output, name: generation)
        defer { work.remove() }
        let uploaded = try await cancelWhenGracefulShutdown {
            try await upload(generation, startedAt: started, snapshot: work.path + "/snapshot")
        }
        var warnings = uploaded.warnings
        warnings += try await name(uploaded.entry)
        // What writes cut off by a kill left in a folder (S3 keeps no part of an object).
        await store.sweepLeftovers(olderThan: Self.leftoverAge)
        let removed: [String]
        do {
            removed = try await removeOldGenerations(current: generation)
        } catch {
            throw Failure(description: "generation \(generation) is published in \(location), but older ones could not be "
                + "removed: \(error)")
        }
        return Published(location: location, generation: generation, objects: uploaded.entry.objects.count,
                         bytes: uploaded.entry.objects.reduce(0) { $0 + $1.bytes }, removed: removed, warnings: warnings)
    }

    // MARK: Uploading

    /// Writes the snapshot to `snapshot` and uploads each of its files under the
    /// generation's shard folder, at most `width` at once, the snapshot's manifest last.
    private func upload(_ generation: String, startedAt: Date,
                        snapshot: String) async throws -> (entry: PublishManifest.Entry, warnings: [String]) {
        var snapshotOptions = SnapshotWriter.Options(output: options.output, destination: snapshot,
                                                     mirrorVersion: options.mirrorVersion)
        snapshotOptions.tables = options.tables
        snapshotOptions.account = options.account
        snapshotOptions.withFiles = options.withFiles
        snapshotOptions.withPages = options.withPages
        let written = try await SnapshotWriter(options: snapshotOptions).write()
        let paths = try Self.files(in: snapshot).filter { $0 != Self.manifestName }

        let folder = "generations/\(generation)/shard-\(options.shard.index)"
        let root = key(folder)
        // Thirty-two random bits make two publishes in one millisecond all but certain to
        // pick different ids; the listing catches an id already used.
        guard try await store.list("generations/\(generation)/").isEmpty else {
            throw Failure(description: "\(location) already holds a generation \(generation): publish again")
        }
        let store = store
        let afterUpload = afterUpload
        let send: @Sendable (String) async throws -> PublishManifest.Object = { path in
            let file = snapshot + "/" + path
            let digest = try await NIOThreadPool.singleton.runIfActive { try SnapshotWriter.digest(file) }
            try await store.upload(folder + "/" + path, fileAt: file)
            let key = root + "/" + path
            try await afterUpload(key)
            return PublishManifest.Object(key: key, path: folder + "/" + path, bytes: digest.bytes, sha256: digest.sha256)
        }
        var objects = try await Bounded.map(paths, width: Self.width, send)
        // The shard's manifest last: a generation that has it has every object it names.
        objects.append(try await send(Self.manifestName))
        let entry = PublishManifest.Entry(
            shard: options.shard.index, generation: generation, publishedAt: Timestamp.string(startedAt),
            manifest: root + "/" + Self.manifestName, manifestPath: folder + "/" + Self.manifestName,
            objects: objects.sorted { $0.key < $1.key })
        return (entry, written.warnings)
    }

    /// The files under `folder`, relative to it, sorted.
    static func files(in folder: String) throws -> [String] {
        guard let enumerator = FileManager.default.enumerator(atPath: folder) else {
            throw Failure(description: "cannot read the snapshot at '\(folder)'")
        }
        var files: [String] = []
        while let path = enumerator.nextObject() as? String {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: folder + "/" + path, isDirectory: &isFolder), !isFolder.boolValue {
                files.append(path)
            }
        }
        return files.sorted()
    }

    // MARK: The top-level manifest

    /// The top-level manifest and its ETag; nil when there is none. One mirror cannot read
    /// (not JSON of this layout, or of a later format) is an error, and is left as it is.
    func readManifest() async throws -> (manifest: PublishManifest, etag: String)? {
        guard let object = try await store.read(Self.manifestName) else { return nil }
        let manifest: PublishManifest
        do {
            manifest = try PublishManifest.decoded(object.bytes).withPaths(under: prefix)
        } catch {
            throw Failure(description: "\(manifestPlace) is not a manifest mirror publish "
                + "writes (\(DecodingProblem.describe(error, snakeCase: true))): left as it is "
                + "(remove it, or publish to another \(location.hasPrefix("file://") ? "folder" : "prefix"))")
        }
        guard manifest.format <= PublishManifest.currentFormat else {
            throw Failure(description: "\(manifestPlace) has format \(manifest.format), "
                + "later than this mirror's \(PublishManifest.currentFormat): left as it is")
        }
        return (manifest, object.tag)
    }

    /// Puts `entry` in the top-level manifest: read it, replace the shard's entry, write it
    /// only if unchanged since read (only if still absent when there was none); when another
    /// writer changed it in between, read it again. Returns the warnings of what it found.
    func name(_ entry: PublishManifest.Entry) async throws -> [String] {
        let shards = options.shard.count
        for attempt in 1...Self.manifestAttempts {
            let current = try await readManifest()
            switch PublishManifest.merge(entry, shards: shards, into: current?.manifest, at: Timestamp.string(Date())) {
            case .alreadyNamed:
                return []
            case let .superseded(later):
                return ["the top-level manifest already names a later generation of shard \(options.shard), \(later): "
                    + "it stays, and \(entry.generation) is not named"]
            case let .write(manifest):
                let body = try manifest.encoded()
                try await beforeManifestWrite(attempt)
                guard try await writeManifest(body, condition: current.map { .ifMatch($0.etag) } ?? .ifNoneMatch) else {
                    logger.info("the top-level manifest changed since it was read: reading it again",
                                metadata: ["attempt": "\(attempt)"])
                    try await Task.sleep(for: .milliseconds(Int.random(in: 10...50) * attempt))
                    continue
                }
                guard let replaced = current?.manifest, replaced.shards != shards else { return [] }
                func count(_ number: Int) -> String { "\(number) shard\(number == 1 ? "" : "s")" }
                return ["the top-level manifest named generations of \(count(replaced.shards)): replaced by one of "
                    + "\(count(shards)), naming shard \(options.shard.index) alone until the others publish"]
            }
        }
        throw Failure(description: "\(manifestPlace) changed between each read and write, "
            + "\(Self.manifestAttempts) times: generation \(entry.generation) is uploaded but not named")
    }

    /// Writes the top-level manifest if `condition` holds; false when it does not.
    private func writeManifest(_ body: [UInt8], condition: S3Client.Condition) async throws(StateError) -> Bool {
        do throws(StateError) {
            try await store.write(Self.manifestName, body, condition: condition)
            return true
        } catch {
            guard error.lostCondition else { throw error }
            return false
        }
    }

    // MARK: Old generations

    /// Removes the shard's generations beyond the newest `keep` complete ones (those that
    /// have their manifest.json), and the incomplete ones older than `current` (publishes
    /// that failed or were stopped); never `current`, nor one the top-level manifest names
    /// now. Each goes manifest first, so a removal cut short leaves an incomplete generation,
    /// which the next publish removes. Returns the generations removed, oldest first.
    func removeOldGenerations(current: String) async throws -> [String] {
        let root = "generations/"
        let folder = "shard-\(options.shard.index)"
        var keys: [String: [String]] = [:]
        var complete: Set<String> = []
        for key in try await store.list(root) {
            let parts = key.dropFirst(root.count).split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, GenerationID.isID(parts[0]), parts[1] == folder else { continue }
            let generation = String(parts[0])
            keys[generation, default: []].append(key)
            if parts[2] == Self.manifestName { complete.insert(generation) }
        }
        let named = Set(try await readManifest()?.manifest.entries.map(\.generation) ?? [])
        let newest = Set(complete.sorted(by: >).prefix(options.keep))
        let removed = keys.keys.filter { generation in
            generation != current && !named.contains(generation) && !newest.contains(generation)
                && (complete.contains(generation) || generation < current)
        }.sorted()
        let store = store
        for generation in removed {
            let manifest = root + generation + "/" + folder + "/" + Self.manifestName
            if complete.contains(generation) { try await store.delete(manifest) }
            _ = try await Bounded.map(keys[generation, default: []].filter { $0 != manifest }, width: Self.width) {
                try await store.delete($0)
            }
            logger.debug("generation removed", metadata: ["generation": "\(generation)"])
        }
        return removed
    }
}
