import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Another `mirror run` holds the output folder (exit status 3).
package struct LockedError: Error, Sendable, CustomStringConvertible {
    package let folder: String
    package let holder: Int32?

    package var description: String {
        let who = holder.map { "pid \($0)" } ?? "another process"
        return "another mirror run (\(who)) holds the lock on '\(folder)'"
    }
}

/// The output folder could not be locked for another reason than another run: its lock
/// file is a symbolic link (never followed) or cannot be opened (exit status 1).
package struct LockFileError: Error, Sendable, CustomStringConvertible {
    package let folder: String
    package let reason: String

    package var description: String { "cannot lock the output folder '\(folder)': \(reason)" }
}

/// An exclusive lock on an output folder, held while the process keeps this value.
/// It is an `flock` on `<folder>/.mirror.lock`: the kernel drops it when the process
/// dies, however it dies, so a killed run never leaves a stale lock behind.
package final class OutputLock: Sendable {
    package static let fileName = ".mirror.lock"
    private let descriptor: Int32

    /// Takes the lock at once or throws `LockedError` naming the holder's pid. A lock file
    /// that is a symbolic link is refused (`LockFileError`), never followed, and so is a
    /// hard link: the pid written into it would truncate whatever the link points to.
    package init(folder: String) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = (folder as NSString).appendingPathComponent(Self.fileName)
        let descriptor = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            let code = errno
            throw LockFileError(folder: folder, reason: OutputFolder.isLink(path, in: AT_FDCWD)
                ? OutputFolder.linkRefusal(Self.fileName) : "'\(Self.fileName)': \(String(cString: strerror(code)))")
        }
        // A hard link planted at the lock's path shares its file with one outside the folder:
        // writing the pid would truncate that file.
        guard let info = FileStatus(descriptor: descriptor), info.links <= 1, info.kind == .regular else {
            close(descriptor)
            throw LockFileError(folder: folder, reason: "'\(Self.fileName)' is a hard link or not a plain file; "
                + "mirror does not write to files it did not make")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = pread(descriptor, &buffer, buffer.count, 0)
            close(descriptor)
            let text = String(decoding: buffer.prefix(max(0, count)), as: UTF8.self)
            throw LockedError(folder: folder, holder: Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = pwrite(descriptor, pid, pid.count, 0)
        self.descriptor = descriptor
    }

    deinit {
        _ = ftruncate(descriptor, 0)
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
