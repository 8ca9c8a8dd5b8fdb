import Foundation
import MirrorFiles

/// A generation's own record, `.replica.json` in its folder: where it came from, the ETag of
/// the manifest it was made from, and its objects, so that the next sync asks for the
/// manifest conditionally and fetches only what changed.
struct GenerationRecord: Codable, Sendable, Equatable {
    var source: String
    var etag: String?
    var objects: [SyncPlan.Object]
}

/// Names inside a generation's folder the sync keeps for itself.
enum Generation {
    static let recordName = ".replica.json"
    /// Readers hold a shared `flock` on it while they read the generation; the sync removes
    /// an old generation only once it can take an exclusive one.
    static let readersName = ".readers"
}

/// The replica's folder on the device:
///
///     current                     a link to generations/<id>: the generation readers open
///     generations/<id>/           a whole generation: its objects, .replica.json, .readers
///     generations/<id>.partial/   one being put together (removed by the next sync)
///     generations/<id>.removed/   one being removed (what a removal cut short left, likewise)
///     partial/<sha256>            objects being fetched, kept to resume with a Range request
///     .sync.lock                  held by the sync under way
///
/// `current` is replaced by a rename: a reader finds the old generation or the new one,
/// whole, and never anything else.
struct ReplicaFolder: Sendable {
    let path: String

    var generations: String { path + "/generations" }
    var partial: String { path + "/partial" }
    var currentLink: String { path + "/current" }

    func folder(of generation: String) -> String { generations + "/" + generation }

    /// The id of the generation `current` names; nil before the first sync.
    func current() -> String? {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: currentLink) else { return nil }
        let id = (target as NSString).lastPathComponent
        return id.isEmpty ? nil : id
    }

    func record(of generation: String) -> GenerationRecord? {
        guard let data = FileManager.default.contents(atPath: folder(of: generation) + "/" + Generation.recordName) else {
            return nil
        }
        return try? JSONDecoder().decode(GenerationRecord.self, from: data)
    }

    /// Writes `record` into the generation's folder whole (a temporary file renamed over it).
    func write(_ record: GenerationRecord, into folder: String) throws(ReplicaError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            try WholeFile.write(try encoder.encode(record), to: folder + "/" + Generation.recordName)
        } catch {
            throw .folder("cannot write \(folder)/\(Generation.recordName): \(SystemError.reason(error))")
        }
    }

    /// Makes the folders a sync writes to.
    func prepare() throws(ReplicaError) {
        for folder in [path, generations, partial] {
            do {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            } catch {
                throw .folder("cannot make \(folder): \(SystemError.reason(error))")
            }
        }
    }

    /// Points `current` at `generation` in one rename, and flushes the folder.
    func makeCurrent(_ generation: String) throws(ReplicaError) {
        let next = path + "/current.next"
        try? FileManager.default.removeItem(atPath: next)
        do {
            try FileManager.default.createSymbolicLink(atPath: next, withDestinationPath: "generations/" + generation)
            try FileSystem.rename(next, to: currentLink)
        } catch {
            try? FileManager.default.removeItem(atPath: next)
            throw .folder("cannot point \(currentLink) at generation \(generation): \(SystemError.reason(error))")
        }
        Self.flush(folder: path)
    }

    /// Removes every generation but `keeping` that no reader holds, generations left half
    /// made, and fetched pieces no longer wanted (`wanted`: SHA-256s of objects to keep).
    func removeOld(keeping: String, wanted: Set<String>) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: generations)) ?? []
        for name in names where name != keeping {
            let folder = generations + "/" + name
            if name.hasSuffix(".partial") || name.hasSuffix(Self.removedSuffix) {
                try? FileManager.default.removeItem(atPath: folder)
                continue
            }
            // Taken while the folder is removed: a reader that opens the file meanwhile waits,
            // then finds the folder gone and opens `current` again.
            guard let readers = try? FileSystem.openLockFile(folder + "/" + Generation.readersName, followingLinks: false,
                                                             creating: false) else {
                try? FileManager.default.removeItem(atPath: folder)
                continue
            }
            defer { try? FileSystem.close(readers) }
            guard (try? FileSystem.lock(readers, waiting: false)) != nil else { continue }
            remove(name)
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: partial)) ?? [] where !wanted.contains(name) {
            try? FileManager.default.removeItem(atPath: partial + "/" + name)
        }
    }

    /// What a generation being removed is renamed to first, so that a removal cut short
    /// leaves no folder that looks whole; the next sync removes what is left.
    static let removedSuffix = ".removed"

    /// Removes the generation `name`, whose `.readers` the caller holds exclusively.
    func remove(_ name: String) {
        let removed = folder(of: name) + Self.removedSuffix
        guard (try? FileSystem.rename(folder(of: name), to: removed)) != nil else { return }
        try? FileManager.default.removeItem(atPath: removed)
    }

    /// `fsync` of a folder: the entries made or renamed in it are on the disk.
    static func flush(folder: String) {
        guard let descriptor = try? FileSystem.openFolder(folder) else { return }
        try? FileSystem.flush(descriptor)
        try? FileSystem.close(descriptor)
    }
}

/// A reader's hold on one generation: a shared `flock` on its `.readers`, so that the sync
/// does not remove it while it is read. Let go when released.
final class GenerationHold: Sendable {
    let generation: String
    let folder: String
    private let replica: ReplicaFolder
    private let descriptor: Int32

    /// Holds the generation `current` names, opening `current` again when the generation
    /// it named was removed before it could be held. Nil when there is none.
    static func current(in replica: ReplicaFolder) -> GenerationHold? {
        for _ in 0..<8 {
            guard let generation = replica.current() else { return nil }
            let folder = replica.folder(of: generation)
            guard let descriptor = try? FileSystem.openLockFile(folder + "/" + Generation.readersName, followingLinks: false,
                                                                creating: false) else { continue }
            guard (try? FileSystem.lockShared(descriptor, waiting: true)) != nil, FileSystem.exists(folder + "/" + Generation.recordName) else {
                try? FileSystem.close(descriptor)
                continue
            }
            return GenerationHold(generation: generation, folder: folder, replica: replica, descriptor: descriptor)
        }
        return nil
    }

    private init(generation: String, folder: String, replica: ReplicaFolder, descriptor: Int32) {
        self.generation = generation
        self.folder = folder
        self.replica = replica
        self.descriptor = descriptor
    }

    /// The last reader of a generation a sync has replaced removes it: the disk it takes is
    /// given back when it is let go, not at the next sync.
    deinit {
        if replica.current() != generation, (try? FileSystem.lock(descriptor, waiting: false)) != nil {
            replica.remove(generation)
        }
        try? FileSystem.close(descriptor)
    }
}
