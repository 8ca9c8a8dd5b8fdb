import Foundation
import GRDBSQLite
import MirrorFiles
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
///
/// A question may say when its request arrived (`moment(after:)`): a moment begun after
/// that instant was taken after every commit made before the request was sent, and the
/// latest one begun is shared with every request that arrived before it. Requests that
/// arrive together, as a busy server's do, then ask the databases once.
package final class CommitWatcher: Sendable {
    /// The folder's databases at one moment. Two equal moments saw no commit between them.
    package struct Moment: Sendable, Equatable {
        fileprivate let stamps: [Stamp]

        /// The names of the folder's databases at this moment, in name order.
        package var databaseNames: [String] { stamps.map(\.name) }
    }

    fileprivate struct Stamp: Sendable, Equatable {
        let name: String
        let file: DatabaseFiles.Identity
        let version: DatabaseVersion
    }

    /// The connection kept for the file a database's name led to when it was opened.
    private struct Watch: Sendable {
        let file: DatabaseFiles.Identity
        let reader: VersionReader
    }

    package let output: String
    private let watches = Mutex<[String: Watch]>([:])
    private let folder = Mutex(FolderWatch())
    /// The moment begun last, and the instant it was begun at (`now()`).
    private let latest = Mutex<(begun: UInt64, moment: Moment)?>(nil)

    package init(output: String) {
        self.output = output
    }

    deinit {
        folder.withLock { $0.stop() }
    }

    /// The instant now, in nanoseconds of the system's monotonic clock, which every thread
    /// of the process reads alike: when a request arrived, for `moment(after:)`.
    package static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// A moment of the databases taken after `arrival` (`now()` when a request arrived): the
    /// latest moment when it was begun later than that, else the moment now. Either shows
    /// every commit that ended before the request was sent. Without `arrival`, the moment now.
    package func moment(after arrival: UInt64?) -> Moment? {
        if let arrival, let shared = latest.withLock({ $0 }), shared.begun > arrival { return shared.moment }
        let begun = Self.now()
        guard let moment = moment() else { return nil }
        latest.withLock { latest in
            if latest.map({ $0.begun < begun }) ?? true { latest = (begun, moment) }
        }
        return moment
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

    /// The names of the folder's databases now, in name order, as `DatabaseFiles.databases(in:)`
    /// finds them, without listing the folder while its entries stay as they were.
    package func databaseNames() -> [String] {
        databases().map(\.name)
    }

    /// `PRAGMA data_version` of the database `name`, on the connection kept for `file`. A
    /// connection kept for another file (the database was made again) is closed, through
    /// SQLite, and one is opened for this one.
    private func version(of name: String, file: DatabaseFiles.Identity) -> DatabaseVersion? {
        var reader = watches.withLock { watches in watches[name].flatMap { $0.file == file ? $0.reader : nil } }
        if reader == nil {
            guard let opened = VersionReader(path: (output as NSString).appendingPathComponent(name)) else { return nil }
            // One connection a file: versions read on two would not compare. Of two opened
            // at once, the first kept is the one asked.
            reader = watches.withLock { watches in
                if let kept = watches[name], kept.file == file { return kept.reader }
                watches[name] = Watch(file: file, reader: opened)
                return opened
            }
        }
        return reader?.version()
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
    /// The inotify watch, when there is one.
    private var events: FolderEvents?
    /// The folder watched: the file its path led to when the watch was added.
    private var folder: DatabaseFiles.Identity?
    private var generation = 0
    private var listed: (entries: [DatabaseFiles.Entry], generation: Int)?

    /// The entries of the folder at `path`, which leads to `now`, when they are still those
    /// last listed, and the generation a listing begun now belongs to.
    mutating func listing(of path: String, at now: DatabaseFiles.Identity?) -> ([DatabaseFiles.Entry]?, Int) {
        if events != nil, now != folder { stop() }
        if events == nil {
            // Watched from now on: what happened before is listed anew.
            generation += 1
            listed = nil
            if now != nil { watch(path, now) }
        } else if changed() {
            generation += 1
            listed = nil
        }
        guard events != nil, let listed, listed.generation == generation else { return (nil, generation) }
        return (listed.entries, generation)
    }

    /// Keeps `entries`, listed in `generation`, while no event came since.
    mutating func keep(_ entries: [DatabaseFiles.Entry], listedIn generation: Int) {
        guard events != nil, generation == self.generation else { return }
        listed = (entries, generation)
    }

    mutating func stop() {
        events?.close()
        events = nil
        folder = nil
        listed = nil
    }

    private mutating func watch(_ path: String, _ now: DatabaseFiles.Identity?) {
        guard let watch = FolderEvents(watching: path) else { return }
        events = watch
        folder = now
    }

    /// Whether an event came since the last read: the events are read, none waited for. A
    /// watch the kernel dropped (the folder removed or moved away), a queue that
    /// overflowed, or a read that failed, ends the watch, to be added again.
    private mutating func changed() -> Bool {
        switch events?.read() {
        case .changed:
            return true
        case .ended:
            stop()
            return true
        case .quiet, nil:
            return false
        }
    }
}

/// What tells two commits of a database apart: the header of its WAL index, or
/// `PRAGMA data_version`. Two of different kinds are never equal.
private enum DatabaseVersion: Sendable, Equatable {
    case walIndex(WALIndex.Header)
    case data(Int)
}

/// A read-only connection to one database file, opened with SQLite's own calls, its
/// `PRAGMA data_version` prepared once and asked under a lock of its own. Through GRDB each
/// question was a `DispatchQueue.sync` on the connection's queue: two threads asking at once
/// parked one of them, which cost `mirror serve` more than the question itself.
///
/// Once the connection has read a database in WAL mode, the header of its WAL index is
/// read instead, where SQLite maps it for this connection, with no lock and no call to the
/// kernel (`WALIndex`): every commit writes it, and while this connection is open the index
/// stays the one every connection writes (SQLite holds a lock on it for as long as a
/// connection uses it, and makes it anew only when no process holds one). A header read
/// while a commit writes it is not used: the question goes to `data_version`.
private final class VersionReader: Sendable {
    private struct Connection {
        let database: OpaquePointer
        let statement: OpaquePointer
    }

    private let connection: Mutex<Connection>
    /// The WAL index, once mapped.
    private let index = Mutex<WALIndex?>(nil)

    /// The connection to the database at `path`, waiting up to 10 s for a lock as every
    /// reader does (`RecordReader.readOnly`); nil when it cannot be opened.
    init?(path: String) {
        var database: OpaquePointer?
        guard sqlite3_open_v2(path, &database, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let database else {
            sqlite3_close(database)
            return nil
        }
        var statement: OpaquePointer?
        sqlite3_busy_timeout(database, 10_000)
        guard sqlite3_prepare_v2(database, "PRAGMA data_version", -1, &statement, nil) == SQLITE_OK, let statement else {
            sqlite3_close(database)
            return nil
        }
        connection = Mutex(Connection(database: database, statement: statement))
    }

    deinit {
        connection.withLock { connection in
            sqlite3_finalize(connection.statement)
            sqlite3_close(connection.database)
        }
    }

    /// The WAL index's header now, when it is mapped and whole; else `PRAGMA data_version`
    /// now, after which the WAL index is mapped if the database is in WAL mode. Nil when
    /// SQLite cannot answer.
    func version() -> DatabaseVersion? {
        if let header = index.withLock({ $0 })?.header() { return .walIndex(header) }
        let version = connection.withLock { connection -> Int? in
            defer { sqlite3_reset(connection.statement) }
            guard sqlite3_step(connection.statement) == SQLITE_ROW else { return nil }
            // Read in WAL mode, this connection now holds the WAL index open.
            if index.withLock({ $0 }) == nil, Self.inWALMode(connection.database) {
                let mapped = WALIndex(connection.database)
                index.withLock { $0 = $0 ?? mapped }
            }
            return Int(sqlite3_column_int64(connection.statement, 0))
        }
        // Mapped just now: the header from the first question on, as every later one reads it.
        if version != nil, let header = index.withLock({ $0 })?.header() { return .walIndex(header) }
        return version.map(DatabaseVersion.data)
    }

    /// Whether the database is in WAL mode (`PRAGMA journal_mode`).
    private static func inWALMode(_ database: OpaquePointer) -> Bool {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(database, "PRAGMA journal_mode", -1, &statement, nil) == SQLITE_OK, let statement else { return false }
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW, let text = sqlite3_column_text(statement, 0) else { return false }
        return String(cString: text) == "wal"
    }
}

/// The header of a database's WAL index (the `-shm` file, https://sqlite.org/walformat.html),
/// read where SQLite maps it for a connection, which keeps it mapped while it is open.
/// SQLite writes it twice at every commit, the second copy first, and reads it without a
/// lock by reading the first copy, then the second, and using them when they are the same;
/// so is it read here. The file is not opened a second time: closing another descriptor of
/// it would let go of the locks SQLite holds on it for the process (POSIX locks are the
/// process's), and with them the index itself, which the next writer would make anew.
private final class WALIndex: @unchecked Sendable {
    /// The 48 bytes of one copy: the change counter, whether it is set up, the page size,
    /// the last frame, the database's pages, the checksums and the salts.
    struct Header: Sendable, Equatable {
        let words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

        init(_ base: UnsafeRawPointer) {
            words = (base.load(as: UInt64.self), base.load(fromByteOffset: 8, as: UInt64.self),
                     base.load(fromByteOffset: 16, as: UInt64.self), base.load(fromByteOffset: 24, as: UInt64.self),
                     base.load(fromByteOffset: 32, as: UInt64.self), base.load(fromByteOffset: 40, as: UInt64.self))
        }

        /// `isInit`, the byte after the change counter.
        var isSetUp: Bool { (words.1 >> 32) & 0xFF != 0 }

        static func == (left: Header, right: Header) -> Bool {
            left.words.0 == right.words.0 && left.words.1 == right.words.1 && left.words.2 == right.words.2
                && left.words.3 == right.words.3 && left.words.4 == right.words.4 && left.words.5 == right.words.5
        }
    }

    /// The first region of the index, as SQLite maps it: 32 KB.
    private static let region: Int32 = 32_768
    private let base: UnsafeRawPointer

    /// The WAL index of the main database of `database`, which has read it in WAL mode;
    /// nil when its file system calls map no index (an older VFS, or none mapped yet).
    init?(_ database: OpaquePointer) {
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite3_file_control(database, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK, let file,
              let methods = file.pointee.pMethods?.pointee, methods.iVersion >= 2, let map = methods.xShmMap else { return nil }
        var region: UnsafeMutableRawPointer?
        guard map(file, 0, Self.region, 0, &region) == SQLITE_OK, let region else { return nil }
        base = UnsafeRawPointer(region)
    }

    /// The header now, when both copies are the same and it is set up; nil while a commit
    /// writes it (or SQLite rebuilds it).
    func header() -> Header? {
        let first = Header(base)
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        let second = Header(base + 48)
        guard first == second, first.isSetUp else { return nil }
        return first
    }
}
