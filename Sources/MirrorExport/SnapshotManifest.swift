/// `manifest.json` of a snapshot: what it holds, to check a copy by (sizes, SHA-256) and
/// to know which change of each database's feed it includes.
import MirrorModel

public struct SnapshotManifest: Codable, Sendable, Equatable {
    /// The snapshot layout's version: 1.
    public var format: Int
    public var mirrorVersion: String
    /// UTC ISO 8601, when the snapshot was started.
    public var createdAt: String
    /// The only account whose rows the snapshot holds; absent when it holds them all.
    public var account: String?
    public var databases: [Database]
    /// The downloaded files the snapshot holds (`--with-files`).
    public var files: [File]

    public struct Database: Codable, Sendable, Equatable {
        /// The file's name in the snapshot, as in the output folder.
        public var path: String
        public var bytes: Int
        public var sha256: String
        /// The last change of the database's feed the copy includes: a device asks for the
        /// changes since it (`export --changes-since`).
        public var changesThrough: Int
        /// The id of that feed: `export --changes-since` refuses a mark of another one.
        public var feed: String
        public var tables: [Table]
    }

    public struct Table: Codable, Sendable, Equatable {
        public var name: String
        public var records: Int
    }

    public struct File: Codable, Sendable, Equatable {
        /// Relative to the snapshot folder, as to the output folder: `files/3f/3fa4…c2.jpg`.
        public var path: String
        public var bytes: Int
        public var sha256: String
    }
}
