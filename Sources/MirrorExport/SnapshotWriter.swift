import Foundation
import MirrorDownload
import MirrorFiles
package import MirrorModel
import MirrorStore
import ServiceLifecycle
import Synchronization

/// Writes a snapshot of an output folder for devices (`mirror snapshot`): a folder with one
/// SQLite file per database (the record tables asked for, one account's rows when asked,
/// the index of their downloaded files, no bookkeeping), their stored pages with
/// `withPages`, the files themselves with `withFiles`, and `manifest.json`. It is made in `DIR.partial` and renamed to `DIR` when
/// whole, so a device or a sync tool never sees half of one; a snapshot already at `DIR`
/// is swapped for the new one in one step.
package struct SnapshotWriter: Sendable {
    /// The snapshot layout's version, in `manifest.json` and `_mirror_snapshot`.
    package static let format = 1

    package struct Options: Sendable {
        /// The output folder.
        package var output: String
        /// Where the snapshot goes.
        package var destination: String
        /// Record tables to include; all when empty.
        package var tables: [String] = []
        package var account: String?
        /// Hard-link (else copy) the downloaded files the snapshot's records name.
        package var withFiles = false
        /// Copy the stored pages of the tables (one account's, with `account`), so that
        /// `mirror serve` on the snapshot answers the API's URLs as on the output folder.
        package var withPages = false
        /// Once the snapshot is in place, drop the changes before this sequence number from
        /// its database's feed.
        package var compactChangesBefore: Int?
        package var mirrorVersion: String

        package init(output: String, destination: String, mirrorVersion: String) {
            self.output = output
            self.destination = destination
            self.mirrorVersion = mirrorVersion
        }
    }

    package struct Failure: Error, Sendable, CustomStringConvertible {
        package let description: String
        /// Another snapshot is writing to the same folder.
        package var busy = false
    }

    /// A snapshot in place.
    package struct Written: Sendable {
        package let manifest: SnapshotManifest
        /// Files the index named that were not on disk as indexed: left out; an earlier
        /// snapshot that could not be removed.
        package internal(set) var warnings: [String]
    }

    package let options: Options

    package init(options: Options) {
        self.options = options
    }

    static let manifestName = "manifest.json"

    /// Writes the snapshot, on a thread of its own (the copy is SQLite's blocking work).
    /// Stopped (`GracefulStop`) or cancelled, it stops the copy going on and leaves nothing behind.
    package func write() async throws -> Written {
        try await cancelWhenGracefulShutdown {
            let stop = SnapshotCopy.Stop()
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    Thread.detachNewThread {
                        continuation.resume(with: Result { try write(stop: stop) })
                    }
                }
            } onCancel: {
                stop.stop()
            }
        }
    }

    /// Writes the snapshot; `stop` stops it from another thread. `between` runs between the
    /// steps of each database's copy, inside its read transaction.
    func write(stop: SnapshotCopy.Stop, between: () throws -> Void = {}) throws -> Written {
        let destination = options.destination
        let partial = destination + ".partial"
        try checkPlaces()
        // One snapshot at a time writes to `DIR`: a second one exits at once.
        let lock = try SnapshotLock(for: destination)
        defer { lock.release() }
        let manager = FileManager.default
        // A `.partial` folder is only ever a snapshot that did not finish.
        do {
            if manager.fileExists(atPath: partial) { try manager.removeItem(atPath: partial) }
            try manager.createDirectory(atPath: partial, withIntermediateDirectories: true)
        } catch {
            throw Failure(description: "\(SystemError.reason(error)) while making '\(partial)'")
        }
        var written: Written
        do {
            written = try fill(partial, stop: stop, between: between)
            try Self.sync(partial)
            try stop.check()
            try place(partial, warnings: &written.warnings)
        } catch {
            try? manager.removeItem(atPath: partial)
            throw error
        }
        if let before = options.compactChangesBefore, let database = written.manifest.databases.first {
            do {
                try ChangeFeed.compact(database: (options.output as NSString).appendingPathComponent(database.path),
                                       before: before)
            } catch {
                throw Failure(description: "the snapshot is in place at '\(destination)', but the change feed of "
                    + "'\(database.path)' could not be compacted: \(error)")
            }
        }
        return written
    }

    /// The output folder exists; `DIR` is free or holds a snapshot.
    private func checkPlaces() throws {
        try Self.checkOutput(options.output)
        var isFolder: ObjCBool = false
        let destination = options.destination
        if FileManager.default.fileExists(atPath: destination, isDirectory: &isFolder) {
            let manifest = (destination as NSString).appendingPathComponent(Self.manifestName)
            guard isFolder.boolValue, FileManager.default.fileExists(atPath: manifest) else {
                throw Failure(description: "'\(destination)' exists and is not a snapshot (it has no \(Self.manifestName)): "
                    + "name a new folder, or one that holds an earlier snapshot")
            }
        }
    }

    /// The output folder `output` exists.
    package static func checkOutput(_ output: String) throws {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: output, isDirectory: &isFolder), isFolder.boolValue else {
            throw Failure(description: "no output folder '\(output)': run `mirror run` first, or name the folder with --output")
        }
    }

    /// Copies the databases (and files) into `folder` and writes the manifest there.
    private func fill(_ folder: String, stop: SnapshotCopy.Stop, between: () throws -> Void) throws -> Written {
        let createdAt = Timestamp.string(Date())
        let wanted = options.tables.isEmpty ? nil : Set(options.tables)
        var manifest = SnapshotManifest(format: Self.format, mirrorVersion: options.mirrorVersion, createdAt: createdAt,
                                        account: options.account, databases: [], files: [])
        var warnings: [String] = []
        var linked: Set<String> = []
        var found: Set<String> = []
        for name in RecordReader.databases(in: options.output) {
            let source = (options.output as NSString).appendingPathComponent(name)
            let target = (folder as NSString).appendingPathComponent(name)
            let copy = SnapshotCopy(source: source, destination: target)
            let copied: SnapshotCopy.Copied?
            do {
                copied = try copy.write(tables: wanted, account: options.account, pages: options.withPages, createdAt: createdAt,
                                        format: Self.format, mirrorVersion: options.mirrorVersion, stop: stop,
                                        between: between) { file in
                    guard options.withFiles else { return true }
                    if linked.contains(file.path) { return true }
                    if let problem = try include(file, into: folder) {
                        warnings.append(problem)
                        return false
                    }
                    linked.insert(file.path)
                    manifest.files.append(SnapshotManifest.File(path: file.path, bytes: file.size, sha256: file.sha256))
                    return true
                }
            } catch let failure as Failure {
                throw failure
            } catch let cancelled as CancellationError {
                throw cancelled
            } catch {
                throw Failure(description: "cannot copy '\(source)': \(SystemError.reason(error))")
            }
            guard let copied else { continue }
            found.formUnion(copied.tables.map(\.name))
            let (bytes, sha256) = try Self.digestWhileFlushing(target)
            manifest.databases.append(SnapshotManifest.Database(
                path: name, bytes: bytes, sha256: sha256, changesThrough: copied.changesThrough, feed: copied.feed,
                tables: copied.tables.map { SnapshotManifest.Table(name: $0.name, records: $0.records) },
                pages: options.withPages))
        }
        if let missing = options.tables.first(where: { !found.contains($0) }) {
            throw Failure(description: "no table '\(missing)' in '\(options.output)'")
        }
        if manifest.databases.isEmpty {
            throw Failure(description: "'\(options.output)' holds no records yet: run `mirror run` first")
        }
        try checkCompaction(manifest)
        manifest.files.sort { $0.path < $1.path }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        var data = try encoder.encode(manifest)
        data.append(0x0A)
        guard FileManager.default.createFile(atPath: (folder as NSString).appendingPathComponent(Self.manifestName),
                                             contents: data) else {
            throw Failure(description: "cannot write '\(folder)/\(Self.manifestName)'")
        }
        return Written(manifest: manifest, warnings: warnings)
    }

    /// A feed is compacted only to a point this snapshot's copy includes: a device given it
    /// must be able to ask for the changes after it.
    private func checkCompaction(_ manifest: SnapshotManifest) throws {
        guard let before = options.compactChangesBefore else { return }
        guard manifest.databases.count == 1, let database = manifest.databases.first else {
            throw Failure(description: "--compact-changes-before: each database has its own change sequence, and this "
                + "snapshot holds \(manifest.databases.count): name the tables of one database with --table")
        }
        guard before <= database.changesThrough + 1 else {
            throw Failure(description: "--compact-changes-before \(before) is past the last change this snapshot holds "
                + "(\(database.changesThrough)): a device given it could not catch up; at most \(database.changesThrough + 1)")
        }
    }

    /// Puts the file `file` names into the snapshot `folder`: a hard link where the file
    /// system allows, else a copy. A reason to leave it out, if it is not on disk as indexed.
    private func include(_ file: SnapshotCopy.IndexedFile, into folder: String) throws -> String? {
        let parts = file.path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.first == Substring(FileNaming.folder), parts.count > 1,
              !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
            return "'\(file.path)' is not a path mirror writes downloads to: left out"
        }
        let source = (options.output as NSString).appendingPathComponent(file.path)
        let target = (folder as NSString).appendingPathComponent(file.path)
        // `files/` and its bucket folder must be real folders: a link there is not followed.
        for depth in 1..<parts.count {
            let folder = (options.output as NSString).appendingPathComponent(parts.prefix(depth).joined(separator: "/"))
            guard FileStatus(entryAt: folder)?.kind == .folder else {
                return "'\(parts.prefix(depth).joined(separator: "/"))' is not a folder of the output folder "
                    + "(a symbolic link is not followed): '\(file.path)' left out"
            }
        }
        guard let info = FileStatus(entryAt: source), info.kind == .regular else {
            return "'\(file.path)' is in the file index but not on disk: left out"
        }
        guard info.size == file.size else {
            return "'\(file.path)' has \(info.size) bytes on disk, not the \(file.size) indexed: left out"
        }
        do {
            try FileManager.default.createDirectory(atPath: Paths.parent(of: target), withIntermediateDirectories: true)
        } catch {
            throw Failure(description: "\(SystemError.reason(error)) while making the folder of \(file.path)")
        }
        do throws(FileError) {
            try FileSystem.link(source, at: target)
            return nil
        } catch {
            guard error.refusesLink else {
                throw Failure(description: "\(SystemError.text(errno: error.code)) while linking \(file.path)")
            }
        }
        do {
            try FileManager.default.copyItem(atPath: source, toPath: target)
        } catch {
            throw Failure(description: "\(SystemError.reason(error)) while copying \(file.path)")
        }
        return nil
    }

    /// A file's size and SHA-256, read 1 MiB at a time.
    package static func digest(_ path: String) throws -> (bytes: Int, sha256: String) {
        do throws(FileDigest.Failure) {
            let (bytes, sha256) = try FileDigest.read(path)
            return (bytes, Hex.string(sha256))
        } catch {
            throw Failure(description: "cannot read '\(path)': \(error.error.reason)")
        }
    }

    /// The database's size and SHA-256, read while the disk takes it: its flush, which `sync`
    /// waits for anyway, runs meanwhile on a second thread, so the hashing's CPU and the
    /// flush's writes overlap.
    private static func digestWhileFlushing(_ path: String) throws -> (bytes: Int, sha256: String) {
        let results = Mutex<(flushed: Result<Void, any Error>?, digest: Result<(bytes: Int, sha256: String), any Error>?)>((nil, nil))
        DispatchQueue.concurrentPerform(iterations: 2) { part in
            if part == 0 {
                let flushed = Result { try Self.flush(path) }
                results.withLock { $0.flushed = flushed }
            } else {
                let digest = Result { try Self.digest(path) }
                results.withLock { $0.digest = digest }
            }
        }
        return try results.withLock { results in
            try results.flushed?.get()
            guard let digest = try results.digest?.get() else {
                throw Failure(description: "cannot read '\(path)'")
            }
            return digest
        }
    }

    /// Flushes the snapshot's own files (its databases and manifest, not the linked files,
    /// which are already on disk) and the folder, so that the rename publishes them whole.
    private static func sync(_ folder: String) throws {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        for path in names.map({ (folder as NSString).appendingPathComponent($0) }) + [folder] {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder),
                  !isFolder.boolValue || path == folder else { continue }
            try flush(path)
        }
    }

    /// Flushes the file or folder at `path` to disk.
    private static func flush(_ path: String) throws {
        let descriptor: Int32
        do throws(FileError) {
            descriptor = try FileSystem.openForReading(path)
        } catch {
            throw Failure(description: "cannot open '\(path)': \(error.reason)")
        }
        defer { try? FileSystem.close(descriptor) }
        do throws(FileError) {
            try FileSystem.flush(descriptor)
        } catch {
            throw Failure(description: "cannot flush '\(path)': \(error.reason)")
        }
    }

    /// Renames the finished snapshot to `DIR`. A snapshot already there is exchanged with it
    /// in one step (Linux's `renameat2(RENAME_EXCHANGE)`), so `DIR` is never missing, and
    /// then removed.
    private func place(_ partial: String, warnings: inout [String]) throws {
        let destination = options.destination
        do throws(FileError) {
            try FileSystem.rename(partial, to: destination)
            return
        } catch {
            guard error.isOccupied else {
                throw Failure(description: "cannot rename '\(partial)' to '\(destination)': \(error.reason)")
            }
        }
        var old = partial
        if !FileSystem.exchange(partial, destination) {
            // No exchange on this file system: the earlier snapshot steps aside for a moment.
            old = destination + ".old"
            try? FileManager.default.removeItem(atPath: old)
            do throws(FileError) {
                try FileSystem.rename(destination, to: old)
            } catch {
                throw Failure(description: "cannot replace '\(destination)': \(error.reason)")
            }
            do throws(FileError) {
                try FileSystem.rename(partial, to: destination)
            } catch {
                try? FileSystem.rename(old, to: destination)
                throw Failure(description: "cannot replace '\(destination)': \(error.reason)")
            }
        }
        do {
            try FileManager.default.removeItem(atPath: old)
        } catch {
            warnings.append("the earlier snapshot, now at '\(old)', could not be removed: \(SystemError.reason(error))")
        }
    }
}

/// An exclusive `flock` on `DIR.lock` while a snapshot writes to `DIR`; the kernel drops it
/// when the process ends, however it ends.
private struct SnapshotLock {
    let descriptor: Int32

    init(for destination: String) throws {
        let path = destination + ".lock"
        do throws(FileError) {
            descriptor = try FileSystem.openLockFile(path, followingLinks: false)
        } catch {
            throw SnapshotWriter.Failure(description: "cannot open '\(path)': \(error.reason)")
        }
        do throws(FileError) {
            try FileSystem.lock(descriptor, waiting: false)
        } catch {
            try? FileSystem.close(descriptor)
            throw SnapshotWriter.Failure(description: "another mirror snapshot is writing '\(destination)': it holds '\(path)'",
                                         busy: true)
        }
    }

    func release() {
        try? FileSystem.close(descriptor)
    }
}
