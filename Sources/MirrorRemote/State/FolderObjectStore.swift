import CDispatch
import Crypto
import Foundation
import Glibc
import MirrorModel
import NIOPosix

/// An `ObjectStore` in a folder (`file:///dir`): a key is a file under it, its tag the
/// SHA-256 of its bytes. Every write goes to a temporary file that is flushed and renamed
/// into place, so a reader sees the old object or the new one, never a part; a conditional
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

    private static func reason() -> String { String(cString: strerror(errno)) }

    private static func tag(_ bytes: [UInt8]) -> String { "\"" + Hex.string(SHA256.hash(data: bytes)) + "\"" }

    private static func contents(_ path: String) throws -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: path) else {
            if access(path, F_OK) != 0, errno == ENOENT { return nil }
            throw StateError("cannot read \(path): \(reason())")
        }
        return [UInt8](data)
    }

    /// Writes `bytes` to a temporary file beside `path`, flushed, then renames it there.
    private static func replace(_ path: String, with bytes: [UInt8]) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        let temporary = (path as NSString).deletingLastPathComponent + "/" + temporaryMark + UUID().uuidString
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw StateError("cannot write \(temporary): \(reason())") }
        var done = 0
        while done < bytes.count {
            let wrote = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + done, bytes.count - done) }
            if wrote < 0, errno == EINTR { continue }
            guard wrote > 0 else {
                let why = reason()
                close(descriptor)
                unlink(temporary)
                throw StateError("cannot write \(temporary): \(why)")
            }
            done += wrote
        }
        guard fsync(descriptor) == 0, close(descriptor) == 0, rename(temporary, path) == 0 else {
            let why = reason()
            unlink(temporary)
            throw StateError("cannot write \(path): \(why)")
        }
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
            let lock = open((root as NSString).appendingPathComponent(Self.lockName), O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            guard lock >= 0 else { throw StateError("\(location): cannot lock \(root): \(Self.reason())") }
            defer { close(lock) }
            while flock(lock, LOCK_EX) != 0 {
                guard errno == EINTR else { throw StateError("\(location): cannot lock \(root): \(Self.reason())") }
            }
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
                _ = try FileDigest.read(source, copyingTo: temporary)
            } catch {
                unlink(temporary)
                throw error
            }
            guard rename(temporary, path) == 0 else {
                let why = Self.reason()
                unlink(temporary)
                throw StateError("cannot write \(path): \(why)")
            }
        }
    }

    package func download(_ key: String, toFileAt destination: String) async throws(StateError) -> S3Client.Downloaded? {
        let path = path(key)
        return try await onPool("read", key) {
            guard access(path, F_OK) == 0 else { return nil }
            do {
                return try FileDigest.read(path, copyingTo: destination)
            } catch {
                unlink(destination)
                throw error
            }
        }
    }

    package func delete(_ key: String) async throws(StateError) {
        let path = path(key)
        try await onPool("remove", key) {
            guard unlink(path) == 0 || errno == ENOENT else { throw StateError("cannot remove \(path): \(Self.reason())") }
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
                var info = stat()
                if lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, Double(info.st_mtim.tv_sec) < limit {
                    unlink(path)
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
            let lock = open((root as NSString).appendingPathComponent(Self.lockName), O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            guard lock >= 0 else {
                if errno == ENOENT { return }
                throw StateError("\(location): cannot lock \(root): \(Self.reason())")
            }
            defer { close(lock) }
            while flock(lock, LOCK_EX) != 0 {
                guard errno == EINTR else { throw StateError("\(location): cannot lock \(root): \(Self.reason())") }
            }
            guard let current = try Self.contents(path).map(Self.tag) else { return }
            guard current == tag else { throw StateError("\(location): \(key) changed since it was read", lostCondition: true) }
            guard unlink(path) == 0 || errno == ENOENT else { throw StateError("cannot remove \(path): \(Self.reason())") }
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
                var info = stat()
                if stat((root as NSString).appendingPathComponent(name), &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
                    keys.append(name)
                }
            }
            return keys.sorted()
        }
    }
}
