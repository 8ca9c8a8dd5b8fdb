/// `manifest.json` of a snapshot: what it holds, to check a copy by (sizes, SHA-256) and
/// to know which change of each database's feed it includes. Written by `snapshot` and
/// `publish`, read by a device.
package struct SnapshotManifest: Codable, Sendable, Equatable {
    /// The snapshot layout's version: 1.
    package var format: Int
    package var mirrorVersion: String
    /// UTC ISO 8601, when the snapshot was started.
    package var createdAt: String
    /// The only account whose rows the snapshot holds; absent when it holds them all.
    package var account: String?
    package var databases: [Database]
    /// The downloaded files the snapshot holds (`--with-files`).
    package var files: [File]

    package init(format: Int, mirrorVersion: String, createdAt: String, account: String?, databases: [Database], files: [File]) {
        self.format = format
        self.mirrorVersion = mirrorVersion
        self.createdAt = createdAt
        self.account = account
        self.databases = databases
        self.files = files
    }

    package struct Database: Codable, Sendable, Equatable {
        /// The file's name in the snapshot, as in the output folder.
        package var path: String
        package var bytes: Int
        package var sha256: String
        /// The last change of the database's feed the copy includes: a device asks for the
        /// changes since it (`export --changes-since`).
        package var changesThrough: Int
        /// The id of that feed: `export --changes-since` refuses a mark of another one.
        package var feed: String
        package var tables: [Table]
        /// Whether it holds the stored pages of its tables (`--with-pages`), which
        /// `mirror serve` answers the API's URLs from.
        package var pages: Bool

        package init(path: String, bytes: Int, sha256: String, changesThrough: Int, feed: String, tables: [Table], pages: Bool) {
            self.path = path
            self.bytes = bytes
            self.sha256 = sha256
            self.changesThrough = changesThrough
            self.feed = feed
            self.tables = tables
            self.pages = pages
        }

        /// A manifest written before `pages` was: its databases hold none.
        package init(from decoder: any Decoder) throws {
            let members = try decoder.container(keyedBy: CodingKeys.self)
            path = try members.decode(String.self, forKey: .path)
            bytes = try members.decode(Int.self, forKey: .bytes)
            sha256 = try members.decode(String.self, forKey: .sha256)
            changesThrough = try members.decode(Int.self, forKey: .changesThrough)
            feed = try members.decode(String.self, forKey: .feed)
            tables = try members.decode([Table].self, forKey: .tables)
            pages = try members.decodeIfPresent(Bool.self, forKey: .pages) ?? false
        }
    }

    package struct Table: Codable, Sendable, Equatable {
        package var name: String
        package var records: Int

        package init(name: String, records: Int) {
            self.name = name
            self.records = records
        }
    }

    package struct File: Codable, Sendable, Equatable {
        /// Relative to the snapshot folder, as to the output folder: `files/3f/3fa4…c2.jpg`.
        package var path: String
        package var bytes: Int
        package var sha256: String

        package init(path: String, bytes: Int, sha256: String) {
            self.path = path
            self.bytes = bytes
            self.sha256 = sha256
        }
    }
}
