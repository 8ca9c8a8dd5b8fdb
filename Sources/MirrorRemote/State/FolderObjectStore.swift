import Crypto
import Foundation
import MirrorFiles
import MirrorModel
import NIOPosix

/// An `ObjectStore` in a folder (`file:///dir`): a key is a file under it, its tag the
/// SHA-256 of its bytes. Every write goes to a temporary file that is flushed and renamed
/// into place, and the folder is flushed after the rename, so a reader sees the old object
/// or the new one, never a part, and a crash does not undo a write that returned; a conditional
/// write holds an `flock` on `<dir>/.lock` from its check to its rename, so two processes
/// (on one machine, or on a shared disk whose locks hold across machines) cannot both win.
/// The work runs on NIO's thread pool: no task's thread waits on the disk or the lock.
package struct FolderObjectStore: ObjectStore {
    package let root: String
    package let location: String

    init(root: String, location: String) {
        self.root = root
        self.location = location
    }

    private static let lockName = ".lock"
    private static let temporaryMark = ".writing-"

    private func path(_ key: String) -> String { (root as NSString).appendingPathComponent(key) }

    private func onPool<T: Sendable>(_ what: String, _ key: String,
                                     _ work: @escaping @Sendable () throws -> T) async throws(StateError) -> T {
        do {
            return try await NIOThreadPool.singleton.runIfActive(work)
        } catch let error as StateError {
            throw error
        } catch {
            throw StateError("\(location): cannot \(what) \(key): \(error)")
        }
    }

    /// Opens `<root>/.lock` and waits for its `flock`.
    private static func lock(_ root: String) throws(FileError) -> Int32 {
        let lock = try FileSystem.openLockFile((root as NSString).appendingPathComponent(lockName), followingLinks: true)
        do throws(FileError) {
            try FileSystem.lock(lock, waiting: true)
        } catch {
            try? FileSystem.close(lock)
            throw error
        }
        return lock
    }

    /// Removes the file at `path`; one already gone is no failure.
    private static func remove(_ path: String) throws(StateError) {
        do throws(FileError) {
            try FileSystem.remove(path)
        } catch {
            guard error.isMissing else { throw StateError("cannot remove \(path): \(error.reason)") }
        }
    }

    private static func tag(_ bytes: [UInt8]) -> String { "\"" + Hex.string(SHA256.hash(data: bytes)) + "\"" }

    private static func contents(_ path: String) throws -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: path) else {
            let absence = FileSystem.absence(path)
            if absence?.isMissing == true { return nil }
            throw StateError("cannot read \(path): \((absence ?? .last).reason)")
        }
        return [UInt8](data)
    }

    /// Flushes the folder `path` is in, so that a rename into it, or a removal, lasts.
    private static func flushFolder(of path: String) throws(StateError) {
        let folder = (path as NSString).deletingLastPathComponent
        do throws(FileError) {
            let descriptor = try FileSystem.openFolder(folder)
            defer { try? FileSystem.close(descriptor) }
            try FileSystem.flush(descriptor)
        } catch {
            throw StateError("cannot flush \(folder): \(error.reason)")
        }
    }

    /// Writes `bytes` to a temporary file beside `path`, flushed, then renames it there.
    private static func replace(_ path: String, with bytes: [UInt8]) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        let temporary = (path as NSString).deletingLastPathComponent + "/" + temporaryMark + UUID().uuidString
        let descriptor: Int32
        do throws(FileError) {
            descriptor = try FileSystem.createNew(temporary)
            do throws(FileError) {
                try FileSystem.write(bytes, to: descriptor)
            } catch {
                try? FileSystem.close(descriptor)
                try? FileSystem.remove(temporary)
                throw error
            }
        } catch {
            throw StateError("cannot write \(temporary): \(error.reason)")
        }
        do throws(FileError) {
            try FileSystem.flush(descriptor)
            try FileSystem.close(descriptor)
            try FileSystem.rename(temporary, to: path)
        } catch {
            try? FileSystem.remove(temporary)
            throw StateError("cannot write \(path): \(error.reason)")
        }
        try flushFolder(of: path)
    }

    package func read(_ key: String) async throws(StateError) -> (bytes: [UInt8], tag: String)? {
        let path = path(key)
        return try await onPool("read", key) { try Self.contents(path).map { ($0, Self.tag($0)) } }
    }

    package func write(_ key: String, _ bytes: [UInt8], condition: S3Client.Condition?) async throws(StateError) -> String {
        let path = path(key)
        let root = root
        let location = location
        return try await onPool("write", key) {
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            let lock: Int32
            do throws(FileError) {
                lock = try Self.lock(root)
            } catch {
                throw StateError("\(location): cannot lock \(root): \(error.reason)")
            }
            defer { try? FileSystem.close(lock) }
            let current = try Self.contents(path).map(Self.tag)
            switch condition {
            case nil: break
            case .ifNoneMatch where current != nil:
                throw StateError("\(location): \(key) is already there", lostCondition: true)
            case let .ifMatch(tag) where current != tag:
                throw StateError("\(location): \(key) changed since it was read", lostCondition: true)
            default: break
            }
            try Self.replace(path, with: bytes)
            return Self.tag(bytes)
        }
    }

    package func upload(_ key: String, fileAt source: String) async throws(StateError) {
        let path = path(key)
        try await onPool("write", key) {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            let temporary = (path as NSString).deletingLastPathComponent + "/" + Self.temporaryMark + UUID().uuidString
            do {
                _ = try S3Client.Downloaded.read(source, copyingTo: temporary)
            } catch {
                try? FileSystem.remove(temporary)
                throw error
            }
            do throws(FileError) {
                try FileSystem.rename(temporary, to: path)
            } catch {
                try? FileSystem.remove(temporary)
                throw StateError("cannot write \(path): \(error.reason)")
            }
            try Self.flushFolder(of: path)
        }
    }

    package func download(_ key: String, toFileAt destination: String) async throws(StateError) -> S3Client.Downloaded? {
        let path = path(key)
        return try await onPool("read", key) {
            guard FileSystem.exists(path) else { return nil }
            do {
                return try S3Client.Downloaded.read(path, copyingTo: destination)
            } catch {
                try? FileSystem.remove(destination)
                throw error
            }
        }
    }

    /// Removes the file, then the folders it leaves empty, up to the root.
    package func delete(_ key: String) async throws(StateError) {
        let path = path(key)
        let root = root
        try await onPool("remove", key) {
            try Self.remove(path)
            var folder = (path as NSString).deletingLastPathComponent
            while folder.hasPrefix(root + "/"), (try? FileSystem.removeEmptyFolder(folder)) != nil {
                folder = (folder as NSString).deletingLastPathComponent
            }
        }
    }

    /// Removes the temporary files of writes cut off (`.writing-<uuid>`, which `list` never
    /// shows) last written more than `age` ago: a write under way writes its file as it goes.
    package func sweepLeftovers(olderThan age: Duration) async {
        let root = root
        let limit = Date().timeIntervalSince1970 - Double(age.components.seconds)
        _ = try? await onPool("sweep", "") {
            guard let walker = FileManager.default.enumerator(atPath: root) else { return }
            while let name = walker.nextObject() as? String {
                guard (name as NSString).lastPathComponent.hasPrefix(Self.temporaryMark) else { continue }
                let path = (root as NSString).appendingPathComponent(name)
                if let info = FileStatus(entryAt: path), info.kind == .regular, Double(info.modified) < limit {
                    try? FileSystem.remove(path)
                }
            }
        }
    }

    /// Under the lock conditional writes hold, so that no write comes between the check and
    /// the removal.
    package func delete(_ key: String, ifTag tag: String) async throws(StateError) {
        let path = path(key)
        let root = root
        let location = location
        try await onPool("remove", key) {
            let lock: Int32
            do throws(FileError) {
                lock = try Self.lock(root)
            } catch {
                if error.isMissing { return }
                throw StateError("\(location): cannot lock \(root): \(error.reason)")
            }
            defer { try? FileSystem.close(lock) }
            guard let current = try Self.contents(path).map(Self.tag) else { return }
            guard current == tag else { throw StateError("\(location): \(key) changed since it was read", lostCondition: true) }
            try Self.remove(path)
        }
    }

    package func list(_ prefix: String) async throws(StateError) -> [String] {
        let root = root
        return try await onPool("list", prefix) {
            guard let walker = FileManager.default.enumerator(atPath: root) else { return [] }
            var keys: [String] = []
            while let name = walker.nextObject() as? String {
                let last = (name as NSString).lastPathComponent
                guard last != Self.lockName, !last.hasPrefix(Self.temporaryMark), name.hasPrefix(prefix) else { continue }
                if FileStatus(path: (root as NSString).appendingPathComponent(name))?.kind == .regular {
                    keys.append(name)
                }
            }
            return keys.sorted()
        }
    }
}
