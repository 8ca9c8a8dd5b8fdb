import Foundation
import GRDBSQLite
import MirrorFiles
import MirrorModel
import Synchronization

/// Finds the SQLite files of an output folder without opening any of them outside SQLite.
///
/// POSIX record locks belong to a process, not to a descriptor: closing *any* descriptor of
/// a file drops every lock the process holds on it, the shared lock of a pooled SQLite
/// connection included. A `mirror serve` that read a database's first bytes with its own
/// `open` and `close` lost its readers' locks that way; the next `mirror run` then saw no
/// reader, checkpointed and deleted `-wal` and `-shm` under it, and serve read a deleted WAL
/// index from then on. So a file is judged by `stat` (by path), and its first bytes are
/// read through SQLite's own file handle: its Unix VFS keeps one lock table per file for
/// all the process's connections and defers closing a descriptor while another
/// connection holds a lock on the file.
enum DatabaseFiles {
    /// A file as `stat` names it: device and inode.
    struct Identity: Sendable, Hashable {
        package let device: UInt64
        let inode: UInt64

        package init?(_ path: String) {
            guard let status = FileStatus(path: path) else { return nil }
            self.init(status)
        }

        package init(_ status: FileStatus) {
            device = status.device
            inode = status.inode
        }
    }

    /// The smallest SQLite database: one page of the smallest page size.
    static let smallestDatabase = 512

    /// Files SQLite has opened as databases, so a long-running reader asks it once a file.
    private static let known = Mutex<Set<Identity>>([])

    /// The SQLite files of a folder, in name order: never a journal, nothing hidden, nothing
    /// but regular files of at least one database page.
    package static func databases(in folder: String) -> [String] {
        identified(in: folder).map(\.name)
    }

    /// The SQLite files of a folder as `databases(in:)` finds them, each with the file its
    /// name leads to now.
    static func identified(in folder: String) -> [(name: String, file: Identity)] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.compactMap { name in
            guard !name.hasPrefix("."), !name.hasSuffix("-wal"), !name.hasSuffix("-shm"), !name.hasSuffix("-journal") else {
                return nil
            }
            return database((folder as NSString).appendingPathComponent(name)).map { (name: name, file: $0) }
        }.sorted { $0.name < $1.name }
    }

    /// An entry of a folder as `identified(in:)` judges it, for a reader that lists the
    /// folder again only when its entries change (see `CommitWatcher`).
    enum Entry: Sendable {
        /// A database, and the file its name leads to: the same while the entry is.
        case database(name: String, file: Identity)
        /// A name to judge again each time: a file that is no database yet (a new one's
        /// first page is written after it is made), or a symbolic link, which may come to
        /// lead elsewhere while the entry stays.
        case unsettled(name: String)
    }

    /// The entries of a folder that are or may become databases, in name order: those
    /// `identified(in:)` finds, and the names it passes over now but may find later. A
    /// folder, a journal or a hidden name stays what it is while its entry does.
    static func entries(in folder: String) -> [Entry] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.sorted().compactMap { name in
            guard !name.hasPrefix("."), !name.hasSuffix("-wal"), !name.hasSuffix("-shm"), !name.hasSuffix("-journal") else {
                return nil
            }
            let path = (folder as NSString).appendingPathComponent(name)
            switch FileStatus(entryAt: path)?.kind {
            case .folder:
                return nil
            case .regular:
                return database(path).map { .database(name: name, file: $0) } ?? .unsettled(name: name)
            default:
                return .unsettled(name: name)
            }
        }
    }

    /// The databases of `entries` now, as `identified(in:)` would find them in `folder`
    /// while no entry was made, removed or renamed since they were listed.
    static func identified(_ entries: [Entry], in folder: String) -> [(name: String, file: Identity)] {
        entries.compactMap { entry in
            switch entry {
            case let .database(name, file):
                return (name: name, file: file)
            case let .unsettled(name):
                return database((folder as NSString).appendingPathComponent(name)).map { (name: name, file: $0) }
            }
        }
    }

    /// The file at `path` when it begins as a SQLite database does, read through a handle
    /// SQLite opened and closes (no schema is read: a file whose header is a database's but
    /// whose pages are broken counts, and opening it later says what is wrong). A file
    /// SQLite cannot open counts as one too, for the same reason.
    private static func database(_ path: String) -> Identity? {
        guard let status = FileStatus(path: path), status.kind == .regular, status.size >= smallestDatabase else { return nil }
        let identity = Identity(status)
        if known.withLock({ $0.contains(identity) }) { return identity }
        var connection: OpaquePointer?
        defer { sqlite3_close(connection) }
        guard sqlite3_open_v2(path, &connection, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { return identity }
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite3_file_control(connection, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK,
              let file, let read = file.pointee.pMethods?.pointee.xRead else { return identity }
        var header = [UInt8](repeating: 0, count: 16)
        guard read(file, &header, 16, 0) == SQLITE_OK, header == Array("SQLite format 3\u{0}".utf8) else { return nil }
        known.withLock { _ = $0.insert(identity) }
        return identity
    }
}
