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

    /// A downloaded file found by the URL it was downloaded from.
    package struct Located: Sendable, Equatable {
        /// Relative to the folder, as `_mirror_files.path` has it: `files/3f/3fa4…c2.jpg`.
        package let path: String
        package let entry: Entry
    }

    /// The file downloaded from `url` (as `_mirror_files.url` has it), from the first database
    /// that lists it as downloaded: an output folder's with status 'ok', a snapshot's (whose
    /// index lists only downloaded files, and has no status) with any.
    package static func find(url: String, in output: String, connections: ReadConnections) throws -> Located? {
        for name in RecordReader.databases(in: output) {
            guard let lent = try connections.take((output as NSString).appendingPathComponent(name)) else { continue }
            defer { connections.give(lent) }
            let row = try lent.queue.inDatabase { db in
                try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM \(StoreSchema.files) WHERE url = ?"), arguments: [url])
            }
            guard let row, !row.hasColumn("status") || (row["status"] as String?) == "ok",
                  let path: String = row["path"], let sha256: String = row["sha256"] else { continue }
            return Located(path: path, entry: Entry(sha256: sha256, contentType: row["content_type"]))
        }
        return nil
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
