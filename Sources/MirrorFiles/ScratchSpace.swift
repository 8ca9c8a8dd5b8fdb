import Synchronization

/// Bytes a process keeps to send again, held in files with no name in a folder (`FileSystem.createScratch`)
/// rather than in its memory: the kernel keeps them in its file cache while memory allows,
/// where they count in no process's resident size and can be dropped under pressure and
/// read again from disk, and a connection can be sent them with `sendfile`. Each is let go,
/// its blocks freed, when the last holder of its `ScratchBytes` lets go.
package final class ScratchSpace: Sendable {
    /// A file takes bytes at its end until this offset; then another is begun, and each is
    /// closed once none of its bytes is held (the blocks of those let go are freed as they go).
    static let fileSpan = 1 << 36

    package let folder: String
    /// How long a folder that refused a file is left alone before it is asked again.
    package let retry: Duration
    private let current = Mutex<Current>(.none)

    private enum Current {
        case none
        case file(ScratchFile)
        /// No file could be made in the folder at that moment: nothing is held here until
        /// `retry` has passed.
        case refused(ContinuousClock.Instant)
    }

    package init(folder: String, retry: Duration = .seconds(10)) {
        self.folder = folder
        self.retry = retry
    }

    /// `bytes`, held; nil when they could not be written (the folder refused a file, or
    /// the disk is full): the caller keeps them itself.
    package func hold(_ bytes: UnsafeRawBufferPointer) -> ScratchBytes? {
        guard let file = file(for: bytes.count) else { return nil }
        return file.append(bytes)
    }

    /// The file that takes `count` more bytes: the current one while it has room, else a new one.
    private func file(for count: Int) -> ScratchFile? {
        current.withLock { current -> ScratchFile? in
            switch current {
            case let .refused(at) where at.duration(to: .now) < retry:
                return nil
            case let .file(file) where file.reserved + count <= Self.fileSpan:
                return file
            case .file, .none, .refused:
                guard let file = try? ScratchFile(in: folder) else {
                    current = .refused(.now)
                    return nil
                }
                current = .file(file)
                return file
            }
        }
    }
}

/// One file of a `ScratchSpace`: bytes appended at its end, each run starting at a multiple
/// of `alignment`, so that letting one go frees all of its blocks.
package final class ScratchFile: Sendable {
    static let alignment = 4096

    package let descriptor: Int32
    private let end = Mutex(0)

    init(in folder: String) throws(FileError) {
        descriptor = try FileSystem.createScratch(in: folder)
    }

    deinit {
        try? FileSystem.close(descriptor)
    }

    /// The bytes taken so far, those let go included.
    var reserved: Int { end.withLock { $0 } }

    /// Writes `bytes` at the end; nil when the write fails (the space it took is let go).
    func append(_ bytes: UnsafeRawBufferPointer) -> ScratchBytes? {
        let span = (bytes.count + Self.alignment - 1) / Self.alignment * Self.alignment
        let start = end.withLock { end in
            defer { end += span }
            return end
        }
        do {
            try FileSystem.write(bytes, to: descriptor, at: start)
        } catch {
            release(start ..< start + span)
            return nil
        }
        return ScratchBytes(file: self, range: start ..< start + bytes.count, span: span)
    }

    /// Frees the blocks of `range`.
    func release(_ range: Range<Int>) {
        FileSystem.punchHole(descriptor, range)
    }
}

/// Bytes held in a `ScratchFile`, at `range` of its `descriptor`; freed when this is.
package final class ScratchBytes: Sendable {
    package let file: ScratchFile
    package let range: Range<Int>
    private let span: Int

    init(file: ScratchFile, range: Range<Int>, span: Int) {
        self.file = file
        self.range = range
        self.span = span
    }

    deinit {
        file.release(range.lowerBound ..< range.lowerBound + span)
    }

    /// The bytes, read back into `buffer`, which holds `range.count`.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws(FileError) {
        try FileSystem.readExactly(file.descriptor, into: buffer, at: range.lowerBound)
    }
}
