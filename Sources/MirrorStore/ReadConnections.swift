import Foundation
package import GRDB
import MirrorModel
import Synchronization

/// Read-only connections to an output folder's databases, kept open between requests:
/// opening one and reading its schema costs more than answering a request. Only databases
/// that hold what the requests read (`serves`) are lent. A connection is lent with a read
/// transaction begun and comes back when it is committed; one whose file was replaced
/// since (a database made again) is closed, not lent.
package final class ReadConnections: Sendable {
    /// A connection and the file it was opened on.
    package struct Lent: Sendable {
        package let queue: DatabaseQueue
        package let path: String
        let file: DatabaseFiles.Identity
    }

    /// Idle connections kept per database, at most.
    static let idlePerDatabase = 8

    /// The page cache of a connection, in KB.
    static let cacheKB = 64

    private let idle = Mutex<[String: [Lent]]>([:])
    private let serves: @Sendable (Database) throws -> Bool

    /// `serves` tells, in a connection's first read transaction, whether its database holds
    /// what the requests read.
    package init(serving serves: @escaping @Sendable (Database) throws -> Bool) {
        self.serves = serves
    }

    /// Databases that keep envelopes (not every mirror database: one no run has written
    /// since envelopes were kept has none), and snapshots written with their pages.
    package static func pages() -> ReadConnections {
        ReadConnections { db in
            try db.tableExists(StoreSchema.pages)
                && (Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0 >= StoreSchema.envelopeVersion
                    || db.tableExists(SnapshotCopy.snapshotTable))
        }
    }

    /// Databases with a file index.
    package static func files() -> ReadConnections {
        ReadConnections { db in try db.tableExists(StoreSchema.files) }
    }

    /// A connection to `path` in a read transaction, or nil when its database does not hold
    /// what the requests read.
    package func take(_ path: String) throws -> Lent? {
        guard let file = DatabaseFiles.Identity(path) else { return nil }
        while let lent = idle.withLock({ $0[path]?.popLast() }) {
            guard lent.file == file else { continue }
            try lent.queue.inDatabase { db in try db.cachedStatement(sql: "BEGIN DEFERRED").execute() }
            return lent
        }
        var configuration = RecordReader.readOnly
        // The read transaction outlives one access: it spans the whole answer.
        configuration.allowsUnsafeTransactions = true
        // Each answer in flight holds a connection: its page cache is most of what an answer
        // holds in memory (SQLite's default, 2 MB, made a client that stopped reading a large
        // page cost 2 MB). The records are read once each; what they are looked up through
        // fits in `cacheKB`, and the rest comes from the operating system's file cache.
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA cache_size = -\(Self.cacheKB)")
        }
        guard let queue = try? DatabaseQueue(path: path, configuration: configuration) else { return nil }
        let serves = self.serves
        let ready = try queue.inDatabase { db in
            try db.execute(sql: "BEGIN DEFERRED")
            return try serves(db)
        }
        return ready ? Lent(queue: queue, path: path, file: file) : nil
    }

    /// Ends the connection's read transaction and keeps it for the next request.
    package func give(_ lent: Lent) {
        guard (try? lent.queue.inDatabase({ db in try db.cachedStatement(sql: "COMMIT").execute() })) != nil else { return }
        idle.withLock { idle in
            if idle[lent.path, default: []].count < Self.idlePerDatabase { idle[lent.path, default: []].append(lent) }
        }
    }
}
