import Foundation
import Glibc
import GRDB
import Synchronization

/// Tells whether anything was committed to an output folder's databases between two
/// moments, cheaply enough to ask before every answer. A moment is, for each database of
/// the folder, the file its name leads to and `PRAGMA data_version` read on a read-only
/// connection kept open for that file: SQLite changes it whenever another connection, of
/// this process or of another, commits to the file (a run, a `DELETE` typed in sqlite3).
/// A database added, removed or made again (another file under the name) changes the
/// moment too. The connections hold no transaction between two questions: they keep no run
/// from writing or checkpointing.
///
/// The folder is listed again only when its entries may have changed: an inotify watch on
/// it is read, without waiting, before each question, and the path is `stat`ed to be
/// still the folder watched. The kernel queues an entry's event before the call that made,
/// removed or renamed it returns, so a question asked after that call sees the event, and
/// reading it and using the listing are one step under a lock (the read never waits).
/// Listing the folder (a `readdir` and a `stat` an entry) on every question was 10% of
/// serve's CPU under `scripts/bench/bench-serve.sh`. Where no watch can be had, the folder is
/// listed each time.
package final class CommitWatcher: Sendable {
    /// The folder's databases at one moment. Two equal moments saw no commit between them.
    package struct Moment: Sendable, Equatable {
        fileprivate let stamps: [Stamp]
    }

    fileprivate struct Stamp: Sendable, Equatable {
        let name: String
        let file: DatabaseFiles.Identity
        let version: Int
    }

    /// The connection kept for the file a database's name led to when it was opened.
    private struct Watch: Sendable {
        let file: DatabaseFiles.Identity
        let queue: DatabaseQueue
    }

    package let output: String
    private let watches = Mutex<[String: Watch]>([:])
    private let folder = Mutex(FolderWatch())

    package init(output: String) {
        self.output = output
    }

    deinit {
        folder.withLock { $0.stop() }
    }

    /// The moment now; nil when a database cannot be asked, and then no moment is the same
    /// as another.
    package func moment() -> Moment? {
        var stamps: [Stamp] = []
        for (name, file) in databases() {
            guard let version = version(of: name, file: file) else { return nil }
            stamps.append(Stamp(name: name, file: file, version: version))
        }
        return Moment(stamps: stamps)
    }

    /// `PRAGMA data_version` of the database `name`, on the connection kept for `file`. A
    /// connection kept for another file (the database was made again) is closed, through
    /// SQLite, and one is opened for this one.
    private func version(of name: String, file: DatabaseFiles.Identity) -> Int? {
        var queue = watches.withLock { watches in watches[name].flatMap { $0.file == file ? $0.queue : nil } }
        if queue == nil {
            let path = (output as NSString).appendingPathComponent(name)
            guard let opened = try? DatabaseQueue(path: path, configuration: RecordReader.readOnly) else { return nil }
            // One connection a file: versions read on two would not compare. Of two opened
            // at once, the first kept is the one asked.
            queue = watches.withLock { watches in
                if let kept = watches[name], kept.file == file { return kept.queue }
                watches[name] = Watch(file: file, queue: opened)
                return opened
            }
        }
        return try? queue?.inDatabase { db in try Int.fetchOne(db.cachedStatement(sql: "PRAGMA data_version")) }
    }

    /// The folder's databases as `DatabaseFiles.identified(in:)` finds them: from the
    /// entries last listed while no entry changed since, else listed again.
    private func databases() -> [(name: String, file: DatabaseFiles.Identity)] {
        let now = DatabaseFiles.Identity(output)
        let (listed, generation) = folder.withLock { $0.listing(of: output, at: now) }
        if let listed { return DatabaseFiles.identified(listed, in: output) }
        let entries = DatabaseFiles.entries(in: output)
        folder.withLock { $0.keep(entries, listedIn: generation) }
        return DatabaseFiles.identified(entries, in: output)
    }
}

/// An inotify watch on an output folder and its entries as last listed. Each event read
/// (an entry made, removed or renamed) starts another generation; a listing is kept only
/// for the generation it was begun in, so one begun before an event is never used after it.
private struct FolderWatch {
    /// The inotify instance, or -1.
    private var descriptor: Int32 = -1
    /// The folder watched: the file its path led to when the watch was added.
    private var folder: DatabaseFiles.Identity?
    private var generation = 0
    private var listed: (entries: [DatabaseFiles.Entry], generation: Int)?

    private static let events = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF)

    /// The entries of the folder at `path`, which leads to `now`, when they are still those
    /// last listed, and the generation a listing begun now belongs to.
    mutating func listing(of path: String, at now: DatabaseFiles.Identity?) -> ([DatabaseFiles.Entry]?, Int) {
        if descriptor >= 0, now != folder { stop() }
        if descriptor < 0 {
            // Watched from now on: what happened before is listed anew.
            generation += 1
            listed = nil
            if now != nil { watch(path, now) }
        } else if changed() {
            generation += 1
            listed = nil
        }
        guard descriptor >= 0, let listed, listed.generation == generation else { return (nil, generation) }
        return (listed.entries, generation)
    }

    /// Keeps `entries`, listed in `generation`, while no event came since.
    mutating func keep(_ entries: [DatabaseFiles.Entry], listedIn generation: Int) {
        guard descriptor >= 0, generation == self.generation else { return }
        listed = (entries, generation)
    }

    mutating func stop() {
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
        folder = nil
        listed = nil
    }

    private mutating func watch(_ path: String, _ now: DatabaseFiles.Identity?) {
        let instance = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard instance >= 0 else { return }
        guard inotify_add_watch(instance, path, Self.events) >= 0 else {
            close(instance)
            return
        }
        descriptor = instance
        folder = now
    }

    /// Whether an event came since the last read: the events are read, none waited for. A
    /// watch the kernel dropped (the folder removed or moved away), a queue that
    /// overflowed, or a read that failed, ends the watch, to be added again.
    private mutating func changed() -> Bool {
        var any = false
        var ended = false
        withUnsafeTemporaryAllocation(byteCount: 4096, alignment: 8) { buffer in
            while true {
                let count = read(descriptor, buffer.baseAddress, buffer.count)
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
        if ended { stop() }
        return any
    }
}
