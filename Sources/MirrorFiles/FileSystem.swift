#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A system call's failure: its errno, read right after the call.
package struct FileError: Error, Sendable, Equatable, CustomStringConvertible {
    package let code: Int32

    package init(code: Int32) {
        self.code = code
    }

    /// The errno now: the failure of the system call just made.
    package static var last: FileError { FileError(code: errno) }

    /// The system's text for it, as it says it (`No such file or directory`).
    package var reason: String { String(cString: strerror(code)) }

    package var description: String { reason }

    /// A read found the file's end before the bytes it was to read (`EIO`).
    package static var endedEarly: FileError { FileError(code: EIO) }

    /// Nothing is at the path.
    package var isMissing: Bool { code == ENOENT }

    /// A rename onto a folder that is there and not empty.
    package var isOccupied: Bool { code == ENOTEMPTY || code == EEXIST }

    /// A hard link the file system will not make there (another file system, too many
    /// links, no links at all): the file is to be copied instead.
    package var refusesLink: Bool { [EXDEV, EPERM, EMLINK, ENOTSUP, EOPNOTSUPP].contains(code) }
}

/// The system calls mirror makes on files and folders, one function a use, each as thin as
/// the call: descriptors are `Int32`s the caller closes, and nothing is allocated that the
/// call did not allocate itself. The one place that imports the system's C library.
package enum FileSystem {
    /// Opens the folder at `path` for reading and as a base for `…at` calls; a link is followed.
    package static func openFolder(_ path: String) throws(FileError) -> Int32 {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .last }
        return descriptor
    }

    /// Opens the file (or folder) at `path` for reading; a link is followed.
    package static func openForReading(_ path: String) throws(FileError) -> Int32 {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .last }
        return descriptor
    }

    /// Opens `name` in the folder open as `folder` for reading, not following a link.
    package static func openForReading(_ name: String, in folder: Int32) throws(FileError) -> Int32 {
        let descriptor = openat(folder, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { throw .last }
        return descriptor
    }

    /// Makes the file at `path` and opens it for writing; fails when something is there.
    package static func createNew(_ path: String) throws(FileError) -> Int32 {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .last }
        return descriptor
    }

    /// Makes `name` in the folder open as `folder` and opens it for writing, not following a
    /// link; fails when something is there.
    package static func createNew(_ name: String, in folder: Int32) throws(FileError) -> Int32 {
        let descriptor = openat(folder, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .last }
        return descriptor
    }

    /// Opens the file at `path` for writing from its start, made (with `mode`) when missing,
    /// emptied when not; with `followingLinks` false, a link there is refused (`ELOOP`).
    package static func createOrEmpty(_ path: String, followingLinks: Bool = true, mode: Int = 0o644) throws(FileError) -> Int32 {
        let flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (followingLinks ? 0 : O_NOFOLLOW)
        let descriptor = open(path, flags, mode_t(mode))
        guard descriptor >= 0 else { throw .last }
        return descriptor
    }

    /// Opens the lock file at `path`, made when missing unless not `creating`; with
    /// `followingLinks` false, a link there is refused (`ELOOP`).
    package static func openLockFile(_ path: String, followingLinks: Bool, creating: Bool = true) throws(FileError) -> Int32 {
        let flags = O_RDWR | O_CLOEXEC | (creating ? O_CREAT : 0) | (followingLinks ? 0 : O_NOFOLLOW)
        let descriptor = open(path, flags, 0o644)
        guard descriptor >= 0 else { throw .last }
        return descriptor
    }

    /// Takes an exclusive `flock` on the open file; `waiting` for it to be let go, else
    /// failing (`EWOULDBLOCK`) while another descriptor holds it.
    package static func lock(_ descriptor: Int32, waiting: Bool) throws(FileError) {
        try lock(descriptor, LOCK_EX, waiting: waiting)
    }

    /// Takes a shared `flock` on the open file, which many descriptors may hold at once and
    /// an exclusive one waits for (or fails at, not waiting).
    package static func lockShared(_ descriptor: Int32, waiting: Bool) throws(FileError) {
        try lock(descriptor, LOCK_SH, waiting: waiting)
    }

    private static func lock(_ descriptor: Int32, _ kind: Int32, waiting: Bool) throws(FileError) {
        guard waiting else {
            guard flock(descriptor, kind | LOCK_NB) == 0 else { throw .last }
            return
        }
        while flock(descriptor, kind) != 0 {
            guard errno == EINTR else { throw .last }
        }
    }

    /// Closes a descriptor.
    package static func close(_ descriptor: Int32) throws(FileError) {
        #if canImport(Glibc)
        guard Glibc.close(descriptor) == 0 else { throw .last }
        #elseif canImport(Darwin)
        guard Darwin.close(descriptor) == 0 else { throw .last }
        #endif
    }

    /// Writes all of `bytes` at the descriptor's position; an interrupted write goes on.
    package static func write(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) throws(FileError) {
        var done = 0
        while done < bytes.count {
            #if canImport(Glibc)
            let wrote = Glibc.write(descriptor, bytes.baseAddress! + done, bytes.count - done)
            #elseif canImport(Darwin)
            let wrote = Darwin.write(descriptor, bytes.baseAddress! + done, bytes.count - done)
            #endif
            if wrote < 0, errno == EINTR { continue }
            guard wrote > 0 else { throw .last }
            done += wrote
        }
    }

    /// Writes all of `bytes` at the descriptor's position.
    package static func write(_ bytes: [UInt8], to descriptor: Int32) throws(FileError) {
        let failure = bytes.withUnsafeBytes { raw -> FileError? in
            do throws(FileError) {
                try write(raw, to: descriptor)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    /// Reads at most `buffer.count` bytes at the descriptor's position: how many were read,
    /// 0 at the end; an interrupted read is tried again.
    package static func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(FileError) -> Int {
        while true {
            #if canImport(Glibc)
            let got = Glibc.read(descriptor, buffer.baseAddress!, buffer.count)
            #elseif canImport(Darwin)
            let got = Darwin.read(descriptor, buffer.baseAddress!, buffer.count)
            #endif
            if got >= 0 { return got }
            guard errno == EINTR else { throw .last }
        }
    }

    /// `pread`: at most `buffer.count` bytes at `offset`, as many as were read, 0 at the end;
    /// an interrupted read is tried again.
    package static func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(FileError) -> Int {
        while true {
            let got = pread(descriptor, buffer.baseAddress, buffer.count, off_t(offset))
            if got >= 0 { return got }
            guard errno == EINTR else { throw .last }
        }
    }

    /// Fills `buffer` with the bytes at `offset` (`pread` until it is full): `.endedEarly`
    /// when the file ends before it is.
    package static func readExactly(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(FileError) {
        var done = 0
        while done < buffer.count {
            let got = try read(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]), at: offset + done)
            guard got > 0 else { throw .endedEarly }
            done += got
        }
    }

    /// Writes all of `bytes` at `offset` (`pwrite`), the descriptor's position left as it
    /// is; an interrupted write goes on.
    package static func write(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32, at offset: Int) throws(FileError) {
        var done = 0
        while done < bytes.count {
            let written = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            if written < 0 {
                if errno == EINTR { continue }
                throw .last
            }
            done += written
        }
    }

    /// A new file in the folder at `folder`, open for reading and writing and already
    /// removed from it: it has no name, and its blocks are freed when its last descriptor
    /// is closed, however the process ends.
    package static func createScratch(in folder: String) throws(FileError) -> Int32 {
        var template = Array((folder.hasSuffix("/") ? folder : folder + "/").utf8CString.dropLast()) + Array("mirror-scratch-XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw .last }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        guard template.withUnsafeBufferPointer({ unlink($0.baseAddress!) }) == 0 else {
            let error = FileError.last
            try? close(descriptor)
            throw error
        }
        return descriptor
    }

    /// Frees the blocks of the bytes `range` of the open file, which then read as zeros,
    /// its size unchanged (`fallocate` punching a hole). A file system that cannot keeps
    /// them; so does a range smaller than its blocks.
    package static func punchHole(_ descriptor: Int32, _ range: Range<Int>) {
        _ = fallocate?(descriptor, 0x01 | 0x02, Int64(range.lowerBound), Int64(range.count))  // KEEP_SIZE | PUNCH_HOLE
    }

    /// glibc's `fallocate`, which Swift's Glibc module does not declare (it is a GNU extension).
    private static let fallocate: (@convention(c) (Int32, Int32, Int64, Int64) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "fallocate") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32, Int64, Int64) -> Int32).self)
    }()

    /// Cuts the open file to `size` bytes.
    package static func truncate(_ descriptor: Int32, to size: Int) throws(FileError) {
        guard ftruncate(descriptor, off_t(size)) == 0 else { throw .last }
    }

    /// Moves the descriptor's offset to `offset` bytes from the start.
    package static func seek(_ descriptor: Int32, to offset: Int) throws(FileError) {
        guard lseek(descriptor, off_t(offset), SEEK_SET) == offset else { throw .last }
    }

    /// The size of the file open as `descriptor`.
    package static func size(_ descriptor: Int32) throws(FileError) -> Int {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .last }
        return Int(status.st_size)
    }

    /// Moves the descriptor's position back to the file's start.
    package static func rewind(_ descriptor: Int32) throws(FileError) {
        guard lseek(descriptor, 0, SEEK_SET) == 0 else { throw .last }
    }

    /// `fsync`: the file's bytes (or a folder's entries) on the disk.
    package static func flush(_ descriptor: Int32) throws(FileError) {
        guard fsync(descriptor) == 0 else { throw .last }
    }

    /// Renames `source` to `destination`, replacing a file there.
    package static func rename(_ source: String, to destination: String) throws(FileError) {
        #if canImport(Glibc)
        guard Glibc.rename(source, destination) == 0 else { throw .last }
        #elseif canImport(Darwin)
        guard Darwin.rename(source, destination) == 0 else { throw .last }
        #endif
    }

    /// Renames `name` in the folder open as `source` to `target` in the one open as `destination`.
    package static func rename(_ name: String, in source: Int32, to target: String, in destination: Int32) throws(FileError) {
        guard renameat(source, name, destination, target) == 0 else { throw .last }
    }

    /// Exchanges what `first` and `second` name in one step: Linux's
    /// `renameat2(RENAME_EXCHANGE)` (looked up in glibc, which may lack it) or Darwin's
    /// `renamex_np(RENAME_SWAP)`. False where the system or the file system cannot.
    package static func exchange(_ first: String, _ second: String) -> Bool {
        #if canImport(Glibc)
        renameExchange?(AT_FDCWD, first, AT_FDCWD, second, 2) == 0
        #elseif canImport(Darwin)
        renamex_np(first, second, UInt32(RENAME_SWAP)) == 0
        #endif
    }

    #if canImport(Glibc)
    /// glibc's `renameat2`, when it has one.
    private static let renameExchange: (@convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "renameat2") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32).self)
    }()
    #endif

    /// Makes a hard link to `source` at `target`.
    package static func link(_ source: String, at target: String) throws(FileError) {
        #if canImport(Glibc)
        guard Glibc.link(source, target) == 0 else { throw .last }
        #elseif canImport(Darwin)
        guard Darwin.link(source, target) == 0 else { throw .last }
        #endif
    }

    /// Removes the file (not a folder) at `path`.
    package static func remove(_ path: String) throws(FileError) {
        guard unlink(path) == 0 else { throw .last }
    }

    /// Removes the folder at `path` if it is empty; fails (`ENOTEMPTY`) if it is not.
    package static func removeEmptyFolder(_ path: String) throws(FileError) {
        guard rmdir(path) == 0 else { throw .last }
    }

    /// Removes the file `name` (not a folder) in the folder open as `folder`.
    package static func remove(_ name: String, in folder: Int32) throws(FileError) {
        guard unlinkat(folder, name, 0) == 0 else { throw .last }
    }

    /// Whether anything is at `path` (a link counts by where it leads).
    package static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    /// Why nothing can be reached at `path`; nil when something is there.
    package static func absence(_ path: String) -> FileError? {
        access(path, F_OK) == 0 ? nil : .last
    }

    /// The names in the folder open as `folder`, `.` and `..` left out, in the order the
    /// file system gives them; nil when it cannot be listed. The descriptor stays the caller's.
    package static func names(in folder: Int32) -> [String]? {
        let copy = dup(folder)
        guard copy >= 0 else { return nil }
        guard let listing = fdopendir(copy) else {
            _ = try? close(copy)
            return nil
        }
        defer { closedir(listing) }
        // The copy shares the descriptor's place in the folder, which an earlier listing left at its end.
        rewinddir(listing)
        var names: [String] = []
        while let entry = readdir(listing) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// This process's id.
    package static var processID: Int32 { getpid() }
}
