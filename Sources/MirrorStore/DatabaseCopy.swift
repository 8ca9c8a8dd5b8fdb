import Foundation
import GRDB
import MirrorModel

/// A whole database of the output folder copied into a new file, one committed state even
/// while a run writes (`VACUUM INTO`, in one read transaction): the copy a remote state
/// store keeps, never a live file with its `-wal` beside it. The source is attached
/// read-only to a connection of its own, so the copy neither blocks a run nor checkpoints
/// the source when it closes. The same content gives the same bytes, so an unchanged
/// database copies to a file whose SHA-256 is the one it had.
package enum DatabaseCopy {
    /// Copies `source` into a new file at `destination` (which must not exist).
    package static func write(from source: String, to destination: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(TableStore.busyTimeout)
        let queue = try DatabaseQueue(configuration: configuration)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "ATTACH DATABASE ? AS source", arguments: [SnapshotCopy.readOnly(source)])
            defer { try? db.execute(sql: "DETACH DATABASE source") }
            try db.execute(sql: "VACUUM source INTO ?", arguments: [destination])
        }
    }

    /// The downloaded files a database (a copy, not a live one) indexes: each one's path
    /// relative to the output folder, size and SHA-256. None when it indexes none.
    package static func downloadedFiles(in path: String) throws -> [SnapshotCopy.IndexedFile] {
        try DatabaseQueue(path: path, configuration: RecordReader.readOnly).read { db in
            guard try db.tableExists(StoreSchema.files) else { return [] }
            return try Row.fetchAll(db, sql: """
                SELECT path, size, sha256 FROM \(StoreSchema.files)
                WHERE status = 'ok' AND path IS NOT NULL AND size IS NOT NULL AND sha256 IS NOT NULL ORDER BY path
                """).map { SnapshotCopy.IndexedFile(path: $0["path"], size: $0["size"], sha256: $0["sha256"]) }
        }
    }
}
