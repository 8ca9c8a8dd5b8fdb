import Foundation
import GRDB
import MirrorModel

/// Finds a downloaded file among an output folder's databases: the `_mirror_files` row that
/// lists its path as downloaded (status 'ok'). Each database is read through a read-only
/// connection of `connections` and nothing is locked.
package enum FileLookup {
    /// What a database's file index holds of a downloaded file.
    package struct Entry: Sendable, Equatable {
        /// The SHA-256 of its bytes, in hex.
        package let sha256: String
        /// The `Content-Type` it was served with, if it was.
        package let contentType: String?
    }

    /// The entry of the file at `path` (below `files/`, as `_mirror_files.path` has it), from
    /// the first database that lists it as downloaded.
    package static func find(_ path: String, in output: String, connections: ReadConnections) throws -> Entry? {
        for name in RecordReader.databases(in: output) {
            guard let lent = try connections.take((output as NSString).appendingPathComponent(name)) else { continue }
            defer { connections.give(lent) }
            let row = try lent.queue.inDatabase { db in
                try Row.fetchOne(db.cachedStatement(sql: """
                    SELECT sha256, content_type FROM \(StoreSchema.files) WHERE path = ? AND status = 'ok'
                    """), arguments: [path])
            }
            if let row { return Entry(sha256: row["sha256"], contentType: row["content_type"]) }
        }
        return nil
    }
}
