import Foundation
import GRDB
import MirrorModel

/// Finds a downloaded file among an output folder's (or a snapshot's) databases: the
/// `_mirror_files` row that lists its path, or the URL it was downloaded from, as downloaded.
/// Each database is read through a read-only connection of `connections` and nothing is
/// locked.
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
    /// that lists it as downloaded.
    package static func find(url: String, in output: String, connections: ReadConnections) throws -> Located? {
        try first(in: output, databases: RecordReader.databases(in: output), connections: connections) { db in
            guard let row = try downloaded(db, where: "url", is: url), let path: String = row["path"] else { return nil }
            return Located(path: path, entry: Entry(sha256: row["sha256"], contentType: row["content_type"]))
        }
    }

    /// The entry of the file at `path` (below `files/`, as `_mirror_files.path` has it), from
    /// the first database that lists it as downloaded: of `databases`, `output`'s as
    /// `RecordReader.databases(in:)` names them (a server keeps them with `CommitWatcher`).
    package static func find(_ path: String, in output: String, databases: [String], connections: ReadConnections) throws -> Entry? {
        try first(in: output, databases: databases, connections: connections) { db in
            try downloaded(db, where: "path", is: path).map { Entry(sha256: $0["sha256"], contentType: $0["content_type"]) }
        }
    }

    /// What `read` finds in the first of `output`'s `databases` where it finds anything.
    private static func first<T>(in output: String, databases: [String], connections: ReadConnections,
                                 _ read: (Database) throws -> T?) throws -> T? {
        for name in databases {
            guard let lent = try connections.take((output as NSString).appendingPathComponent(name)) else { continue }
            defer { connections.give(lent) }
            if let found = try lent.queue.inDatabase(read) { return found }
        }
        return nil
    }

    /// The index's row of a downloaded file whose `column` is `value`: in an output folder's
    /// database one with status 'ok'; a snapshot's index (a device's too) lists only
    /// downloaded files, and has no status.
    private static func downloaded(_ db: Database, where column: String, is value: String) throws -> Row? {
        let status = try db.columns(in: StoreSchema.files).contains { $0.name == "status" }
        return try Row.fetchOne(db.cachedStatement(sql: """
            SELECT path, sha256, content_type FROM \(StoreSchema.files) WHERE \(column) = ?\(status ? " AND status = 'ok'" : "")
            """), arguments: [value])
    }
}
