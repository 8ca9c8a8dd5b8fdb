#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An inotify watch on a folder's entries: one made, removed or renamed, or the folder
/// itself removed or moved away. Linux only; elsewhere no watch can be had, and a reader
/// asks the folder itself each time.
package struct FolderEvents: Sendable {
    /// What came since the last read.
    package enum Change: Sendable {
        /// No event.
        case quiet
        /// An entry was made, removed or renamed.
        case changed
        /// The watch can no longer be trusted: the kernel dropped it (the folder removed or
        /// moved away), its queue overflowed, or a read failed. It is to be closed.
        case ended
    }

    /// The inotify instance.
    private let descriptor: Int32

    /// Watches the folder at `path`; nil when no watch can be had.
    package init?(watching path: String) {
        #if canImport(Glibc)
        let instance = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard instance >= 0 else { return nil }
        let events = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF)
        guard inotify_add_watch(instance, path, events) >= 0 else {
            _ = try? FileSystem.close(instance)
            return nil
        }
        descriptor = instance
        #else
        return nil
        #endif
    }

    /// Reads the events that came, none waited for.
    package func read() -> Change {
        #if canImport(Glibc)
        var any = false
        var ended = false
        withUnsafeTemporaryAllocation(byteCount: 4096, alignment: 8) { buffer in
            while true {
                let count = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
                guard count > 0 else {
                    // Anything but "nothing to read" leaves the watch untrusted.
                    if count < 0, errno != EAGAIN { any = true; ended = true }
                    break
                }
                any = true
                var offset = 0
                while offset + 16 <= count {
                    let mask = buffer.load(fromByteOffset: offset + 4, as: UInt32.self)
                    let length = Int(buffer.load(fromByteOffset: offset + 12, as: UInt32.self))
                    if mask & UInt32(IN_IGNORED | IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT) != 0 { ended = true }
                    offset += 16 + length
                }
            }
        }
        return ended ? .ended : any ? .changed : .quiet
        #else
        return .ended
        #endif
    }

    /// Ends the watch.
    package func close() {
        _ = try? FileSystem.close(descriptor)
    }
}
