import Foundation
import GRDB
import Synchronization

/// Read-only connections to an output folder's databases that keep envelopes, kept open
/// between requests: opening one and reading its schema costs more than answering a page.
/// A connection is lent with a read transaction begun and comes back when it is committed;
/// one whose file was replaced since (a database made again) is closed, not lent.
final class ReplayConnections: Sendable {
    /// A connection and the file it was opened on.
    struct Lent: Sendable {
        let queue: DatabaseQueue
        let path: String
        let file: FileIdentity
    }

    struct FileIdentity: Sendable, Equatable {
        let device: UInt64
        let inode: UInt64

        init?(_ path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
        }
    }

    /// Idle connections kept per database, at most.
    static let idlePerDatabase = 8

    private let idle = Mutex<[String: [Lent]]>([:])

    init() {}

    /// A connection to `path` in a read transaction, or nil when the database keeps no
    /// envelopes (not a mirror database, or one no run has written since envelopes were kept).
    func take(_ path: String) throws -> Lent? {
        guard let file = FileIdentity(path) else { return nil }
        while let lent = idle.withLock({ $0[path]?.popLast() }) {
            guard lent.file == file else { continue }
            try lent.queue.inDatabase { db in try db.execute(sql: "BEGIN DEFERRED") }
            return lent
        }
        var configuration = RecordReader.readOnly
        // The read transaction outlives one access: it spans the whole answer.
        configuration.allowsUnsafeTransactions = true
        guard let queue = try? DatabaseQueue(path: path, configuration: configuration) else { return nil }
        let ready = try queue.inDatabase { db in
            try db.execute(sql: "BEGIN DEFERRED")
            return try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0 >= StoreSchema.envelopeVersion
                && db.tableExists(StoreSchema.pages)
        }
        return ready ? Lent(queue: queue, path: path, file: file) : nil
    }

    /// Ends the connection's read transaction and keeps it for the next request.
    func give(_ lent: Lent) {
        guard (try? lent.queue.inDatabase({ db in try db.execute(sql: "COMMIT") })) != nil else { return }
        idle.withLock { idle in
            if idle[lent.path, default: []].count < Self.idlePerDatabase { idle[lent.path, default: []].append(lent) }
        }
    }
}
