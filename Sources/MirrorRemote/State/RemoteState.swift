import Foundation
package import Logging
import MirrorFiles
import MirrorHTTP
package import MirrorJobFile
package import MirrorModel
import MirrorStore
import NIOPosix

/// A shard's state kept in a remote store (`--state`), so that a worker with an empty folder
/// resumes where the last one stopped: the shard's lease is taken before anything else, the
/// shard's databases are pulled when the remote copies are newer than the folder's, and
/// consistent copies of them (`DatabaseCopy`, never a live file) are pushed when asked, with
/// the downloaded files they index. In the store:
///
/// - `shards/<I>-of-<N>/lease.json`: the lease (`ShardLease`);
/// - `shards/<I>-of-<N>/manifest.json`: the databases' objects (`StateManifest`), written last;
/// - `databases/<path>/<sha256>.sqlite`: each pushed copy, named by its content, so a copy
///   that did not change is not sent again, and a manifest never names a half-written object;
/// - `files/<2 hex>/<sha256>[.ext]`: downloaded files by content, shared by every shard; one
///   already there is not sent again.
///
/// In the output folder, `.mirror-state/` holds `state.json` (`StateMark`) and, while they
/// are made, the copies pushed and pulled.
package actor RemoteState {
    /// What a pull brought.
    package struct Pulled: Sendable, Equatable {
        package var databases = 0
        package var files = 0
        package var bytes = 0
        /// The remote generation the folder now has; nil when the store held no state yet.
        package var generation: Int?
    }

    /// What a push sent.
    package struct Pushed: Sendable, Equatable {
        /// Databases sent, and those whose copy was already there.
        package var databases = 0
        package var unchanged = 0
        package var files = 0
        package var bytes = 0
        /// The generation written; nil when nothing changed, so nothing was written.
        package var generation: Int?
    }

    package nonisolated let store: any ObjectStore
    package nonisolated let shard: ShardPlan.Shard
    package nonisolated let lease: ShardLease
    private let output: String
    /// Paths in the output folder, each after the databases of its jobs' parents (`copyOrder`).
    private let databases: [String]
    private let logger: Logger
    private var manifest: StateManifest?
    private var manifestTag: String?
    /// The keys under `files/`, once listed.
    private var storedFiles: Set<String>?
    /// Every pull and push so far, added up.
    package private(set) var summary: StateSummary
    /// The jobs have ended: no push of `--push-every` starts any more.
    private var closing = false
    /// A push of `--push-every` is under way; `close` waits for it.
    private var periodic = false
    private var closers: [CheckedContinuation<Void, Never>] = []
    private let pulls = StateMetrics(.pull)
    private let pushes = StateMetrics(.push)

    package static let folderName = ".mirror-state"
    /// Files pulled at once.
    static let pullWidth = 8

    /// `parents` names, for a database, the databases of its jobs' parents (`parent`).
    package init(store: any ObjectStore, shard: ShardPlan.Shard, output: String, databases: [String],
                 parents: [String: Set<String>] = [:], leaseTime: Duration, logger: Logger) {
        self.store = store
        self.shard = shard
        self.output = output
        self.databases = Self.copyOrder(databases, parents: parents)
        self.logger = logger
        summary = StateSummary(location: store.location, shard: shard.description)
        lease = ShardLease(store: store, key: "\(Self.shardFolder(shard))/lease.json", time: leaseTime)
    }

    /// The order in which a push copies the databases: a parent's database before its
    /// children's, grandchildren after children, otherwise by name. A parent's file says a
    /// parent is walked (it leaves `_mirror_parents`) only after its children are stored in
    /// the child's file, so a child's copy taken after the parent's holds the children of
    /// every parent that copy says is walked. Databases whose jobs are each other's parents
    /// both ways (a cycle) are copied by name.
    static func copyOrder(_ databases: [String], parents: [String: Set<String>]) -> [String] {
        var left = Set(databases)
        var order: [String] = []
        while !left.isEmpty {
            let ready = left.filter { parents[$0, default: []].subtracting([$0]).isDisjoint(with: left) }.sorted()
            // A cycle: its databases go by name.
            let next = ready.isEmpty ? [left.min()!] : ready
            order.append(contentsOf: next)
            left.subtract(next)
        }
        return order
    }

    static func shardFolder(_ shard: ShardPlan.Shard) -> String { "shards/\(shard.index)-of-\(shard.count)" }

    private var manifestKey: String { "\(Self.shardFolder(shard))/manifest.json" }
    private var folder: String { (output as NSString).appendingPathComponent(Self.folderName) }
    private var markPath: String { (folder as NSString).appendingPathComponent("state.json") }

    private func local(_ path: String) -> String { (output as NSString).appendingPathComponent(path) }

    /// Takes the lease (`LeaseHeldError` when another worker holds it), then pulls the
    /// shard's databases if the remote state is newer than the folder's.
    package func begin() async throws -> Pulled {
        try prepareFolder()
        try await lease.take()
        // What pushes cut off left; a live writer's file is younger than a lease.
        await store.sweepLeftovers(olderThan: lease.time)
        do {
            let started = ContinuousClock.now
            let pulled = try await pull()
            pulls.transferred(bytes: pulled.bytes, elapsed: ContinuousClock.now - started)
            summary.pulledDatabases = pulled.databases
            summary.pulledFiles = pulled.files
            summary.pulledBytes = pulled.bytes
            summary.generation = pulled.generation
            return pulled
        } catch {
            await lease.release()
            throw error
        }
    }

    /// Gives the lease back.
    package func end() async {
        await lease.release()
    }

    private func prepareFolder() throws(StateError) {
        do {
            // What a killed push or pull left.
            try? FileManager.default.removeItem(atPath: work)
            try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        } catch {
            throw StateError("cannot make \(folder): \(error)")
        }
    }

    private var work: String { (folder as NSString).appendingPathComponent("work") }

    private func pull() async throws(StateError) -> Pulled {
        var pulled = Pulled()
        guard let (bytes, tag) = try await store.read(manifestKey) else { return pulled }
        let remote = try StateManifest.decode(bytes, location: store.location, key: manifestKey)
        manifest = remote
        manifestTag = tag
        pulled.generation = remote.generation
        if let mark = StateMark.read(markPath), mark.location == store.location, mark.shard == shard.description,
           mark.generation >= remote.generation {
            return pulled
        }
        // Every name is checked before anything is replaced: a path must stay in the output
        // folder, an object under databases/ (on a folder store, `..` would leave the store).
        for database in remote.databases {
            let what = Self.escapes(database.path) ? "'\(database.path)', which is outside the output folder"
                : !database.object.hasPrefix("databases/") || Self.escapes(database.object)
                ? "the object '\(database.object)', which is not under databases/" : nil
            if let what {
                throw StateError("\(store.location): \(manifestKey) names \(what): nothing was pulled; "
                    + "remove \(manifestKey) to start the shard from the folder, or restore it")
            }
        }
        for database in remote.databases {
            let temporary = (work as NSString).appendingPathComponent("pulled")
            guard let got = try await store.download(database.object, toFileAt: temporary) else {
                throw StateError("\(store.location): \(database.object), which \(manifestKey) names, is not there")
            }
            guard got.sha256 == database.sha256, got.size == database.size else {
                try? FileSystem.remove(temporary)
                throw StateError("\(store.location): \(database.object) has \(got.size) bytes of SHA-256 \(got.sha256), "
                    + "not the \(database.size) bytes of \(database.sha256) its manifest says")
            }
            let path = local(database.path)
            do {
                try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                        withIntermediateDirectories: true)
            } catch {
                throw StateError("cannot make the folder of \(path): \(error)")
            }
            // The folder's older copy goes whole: its WAL belongs to it, not to the copy.
            try? FileSystem.remove(path + "-wal")
            try? FileSystem.remove(path + "-shm")
            do throws(FileError) {
                try FileSystem.rename(temporary, to: path)
            } catch {
                throw StateError("cannot put the pulled copy at \(path): \(error.reason)")
            }
            pulled.databases += 1
            pulled.bytes += got.size
            let files = try await pullFiles(indexedBy: path)
            pulled.files += files.files
            pulled.bytes += files.bytes
        }
        try StateMark(location: store.location, shard: shard.description, generation: remote.generation).write(to: markPath)
        return pulled
    }

    /// A path or key that starts at the root or climbs out with a `..` segment.
    private static func escapes(_ path: String) -> Bool {
        path.hasPrefix("/") || path.split(separator: "/", omittingEmptySubsequences: false).contains("..")
    }

    /// Fetches the downloaded files the pulled database at `path` indexes and the folder
    /// lacks, from `files/`, `pullWidth` at a time, each checked against its SHA-256: so the
    /// walk does not download them from the API again, and a snapshot holds them. One the
    /// store lacks (it was gone from disk when pushed) is left to the walk.
    private func pullFiles(indexedBy path: String) async throws(StateError) -> (files: Int, bytes: Int) {
        let indexed: [SnapshotCopy.IndexedFile]
        do {
            indexed = try DatabaseCopy.downloadedFiles(in: path)
        } catch {
            throw StateError("cannot read the index of downloaded files of \(path): \(error)")
        }
        let wanted = indexed.filter { file in
            // The key is made of the index's digest: one that is not a SHA-256 names no file of the store.
            return file.path.hasPrefix(ReservedNames.filesFolder + "/") && !Self.escapes(file.path)
                && file.sha256.count == 64 && file.sha256.allSatisfy(\.isHexDigit)
                && FileStatus(path: local(file.path))?.size != file.size
        }
        guard !wanted.isEmpty else { return (0, 0) }
        if storedFiles == nil { storedFiles = Set(try await store.list("files/")) }
        let present = wanted.filter { storedFiles!.contains(Self.fileKey($0)) }
        let store = store
        let output = output
        let work = work
        // Each file's size; nil for one the store turned out not to hold.
        let sizes: [Int?]
        do {
            sizes = try await Bounded.map(Array(present.enumerated()), width: Self.pullWidth) { entry in
                let (index, file) = entry
                let temporary = (work as NSString).appendingPathComponent("file-\(index)")
                let path = (output as NSString).appendingPathComponent(file.path)
                guard let got = try await store.download(Self.fileKey(file), toFileAt: temporary) else { return nil }
                guard got.sha256 == file.sha256, got.size == file.size else {
                    try? FileSystem.remove(temporary)
                    throw StateError("\(store.location): \(Self.fileKey(file)) is not the file its name says")
                }
                try? FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                         withIntermediateDirectories: true)
                do throws(FileError) {
                    try FileSystem.rename(temporary, to: path)
                } catch {
                    throw StateError("cannot put the pulled file at \(path): \(error.reason)")
                }
                return got.size
            }
        } catch let error as StateError {
            throw error
        } catch {
            throw StateError("cannot pull the downloaded files of \(path): \(error)")
        }
        let pulled = sizes.compactMap { $0 }
        return (pulled.count, pulled.reduce(0, +))
    }

    /// Pushes a consistent copy of each of the shard's databases that changed since the
    /// last push, and the downloaded files they index that the store lacks, then the new
    /// manifest, only if no other worker wrote one since this one read it.
    package func push() async throws(StateError) -> Pushed {
        do {
            let started = ContinuousClock.now
            let pushed = try await pushOnce()
            pushes.transferred(bytes: pushed.bytes, elapsed: ContinuousClock.now - started)
            summary.failure = nil
            if pushed.generation != nil { summary.pushes += 1 }
            summary.pushedDatabases += pushed.databases
            summary.pushedFiles += pushed.files
            summary.pushedBytes += pushed.bytes
            summary.generation = pushed.generation ?? summary.generation
            return pushed
        } catch {
            summary.failure = error.description
            throw error
        }
    }

    /// A push of `--push-every`: none once `close` was called, and `close` waits for one under
    /// way, so the jobs' end never cuts a push off half-way.
    package func pushPeriodically() async throws(StateError) -> Pushed? {
        guard !closing else { return nil }
        periodic = true
        defer {
            periodic = false
            for closer in closers { closer.resume() }
            closers = []
        }
        return try await push()
    }

    /// Starts no more pushes of `--push-every`, once the one under way, if any, has ended.
    package func close() async {
        closing = true
        guard periodic else { return }
        await withCheckedContinuation { closers.append($0) }
    }

    /// Marks the lease as lost: nothing more is pushed.
    package func leaseLost() {
        summary.leaseLost = true
    }

    private func pushOnce() async throws(StateError) -> Pushed {
        guard !summary.leaseLost else { throw StateError("the lease of shard \(shard) was lost: nothing was pushed") }
        var pushed = Pushed()
        var entries: [StateManifest.Database] = []
        var changed = false
        // Every database is read or copied first, in `databases`' order, and only then is
        // anything sent: the copies are one cut of the walk, however slow the store.
        var taken: [(path: String, earlier: StateManifest.Database?, taken: Taken)] = []
        defer {
            for entry in taken {
                if case let .copied(copy, _, _, _) = entry.taken { try? FileSystem.remove(copy) }
            }
        }
        for (index, path) in databases.enumerated() {
            let source = local(path)
            guard FileSystem.exists(source) else { continue }
            let earlier = manifest?.databases.first { $0.path == path }
            // What the database holds, read where it is: when it is what the last push held
            // (times aside), no copy is made and none is sent.
            if let earlier, let content = earlier.content,
               try await Self.onPool("read \(source)", { try DatabaseContent.digest(of: source) }) == content {
                let files = try await Self.onPool("read \(source)") { try DatabaseCopy.downloadedFiles(in: source) }
                taken.append((path, earlier, .unchanged(earlier, files)))
                continue
            }
            let copy = (work as NSString).appendingPathComponent("push-\(index).copy")
            let made = try await Self.onPool("copy \(source)") { () throws -> (S3Client.Downloaded, String, [SnapshotCopy.IndexedFile]) in
                try? FileSystem.remove(copy)
                try DatabaseCopy.write(from: source, to: copy)
                return (try S3Client.Downloaded.read(copy), try DatabaseContent.digest(of: copy), try DatabaseCopy.downloadedFiles(in: copy))
            }
            taken.append((path, earlier, .copied(copy, made.0, made.1, made.2)))
        }
        for (path, earlier, what) in taken {
            let files: [SnapshotCopy.IndexedFile]
            switch what {
            case let .unchanged(entry, indexed):
                entries.append(entry)
                pushed.unchanged += 1
                files = indexed
            case let .copied(copy, digest, content, indexed):
                files = indexed
                if let earlier, earlier.sha256 == digest.sha256 || earlier.content == content {
                    // The same bytes, or only times changed since (a copy made while a walk wrote).
                    var kept = earlier
                    if kept.content == nil {
                        // Named by a manifest that did not keep digests of content: now it does.
                        kept.content = content
                        changed = true
                    }
                    entries.append(kept)
                    pushed.unchanged += 1
                } else {
                    let object = "databases/\(path)/\(digest.sha256).sqlite"
                    try await store.upload(object, fileAt: copy)
                    entries.append(.init(path: path, object: object, size: digest.size, sha256: digest.sha256, content: content))
                    pushed.databases += 1
                    pushed.bytes += digest.size
                    changed = true
                }
            }
            let sent = try await pushFiles(files)
            pushed.files += sent.files
            pushed.bytes += sent.bytes
        }
        // Databases the manifest names that this run does not hold stay as they are.
        for earlier in manifest?.databases ?? [] where !entries.contains(where: { $0.path == earlier.path }) {
            entries.append(earlier)
        }
        guard changed || manifest == nil && !entries.isEmpty else { return pushed }
        let next = StateManifest(shard: shard.description, generation: (manifest?.generation ?? 0) + 1,
                                 pushedAt: Timestamp.string(Date()), databases: entries.sorted { $0.path < $1.path })
        let bytes = next.encoded()
        do throws(StateError) {
            manifestTag = try await store.write(manifestKey, bytes, condition: manifestTag.map { .ifMatch($0) } ?? .ifNoneMatch)
        } catch {
            guard error.lostCondition else { throw error }
            // A write retried after its answer was lost finds itself there: that is success.
            if let written = try await store.read(manifestKey), written.bytes == bytes {
                manifestTag = written.tag
            } else {
                throw StateError("\(store.location): another worker wrote \(manifestKey) since this run read it: "
                    + "this run's databases were not pushed (the folder keeps them)")
            }
        }
        let superseded = Set(manifest?.databases.map(\.object) ?? []).subtracting(next.databases.map(\.object))
        manifest = next
        pushed.generation = next.generation
        try StateMark(location: store.location, shard: shard.description, generation: next.generation).write(to: markPath)
        for object in superseded.sorted() {
            do {
                try await store.delete(object)
            } catch {
                logger.warning("cannot remove a superseded copy from the remote state",
                               metadata: ["object": "\(object)", "error": "\(error)"])
            }
        }
        return pushed
    }

    /// A database as a push took it: unchanged since the last push (the manifest's entry, and
    /// the files it indexes), or copied to a file (with its digest, its content's and the
    /// files it indexes).
    private enum Taken {
        case unchanged(StateManifest.Database, [SnapshotCopy.IndexedFile])
        case copied(String, S3Client.Downloaded, String, [SnapshotCopy.IndexedFile])
    }

    /// Sends the downloaded files the store does not hold yet.
    private func pushFiles(_ files: [SnapshotCopy.IndexedFile]) async throws(StateError) -> (files: Int, bytes: Int) {
        guard !files.isEmpty else { return (0, 0) }
        if storedFiles == nil { storedFiles = Set(try await store.list("files/")) }
        var sent = (files: 0, bytes: 0)
        for file in files {
            let key = Self.fileKey(file)
            guard !storedFiles!.contains(key) else { continue }
            let path = local(file.path)
            // Removed or cut short since it was indexed: the next download sends it.
            guard FileStatus(path: path)?.size == file.size else { continue }
            try await store.upload(key, fileAt: path)
            storedFiles!.insert(key)
            sent.files += 1
            sent.bytes += file.size
        }
        return sent
    }

    /// `files/<2 hex>/<sha256>[.ext]`, the extension the file has in the output folder.
    static func fileKey(_ file: SnapshotCopy.IndexedFile) -> String {
        let name = (file.path as NSString).lastPathComponent
        let dot = name.lastIndex(of: ".")
        let ext = dot.map { String(name[$0...]) } ?? ""
        return "files/\(file.sha256.prefix(2))/\(file.sha256)\(ext)"
    }

    private static func onPool<T: Sendable>(_ what: String, _ work: @escaping @Sendable () throws -> T) async throws(StateError) -> T {
        do {
            return try await NIOThreadPool.singleton.runIfActive(work)
        } catch let error as StateError {
            throw error
        } catch {
            throw StateError("cannot \(what): \(error)")
        }
    }
}
