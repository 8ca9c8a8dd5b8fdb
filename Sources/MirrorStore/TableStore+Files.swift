import Foundation
import GRDB
import MirrorFiles
package import MirrorModel

extension TableStore {
    /// Registers the files a page points to; returns those still to download: never
    /// tried, failed, refused, or downloaded but since removed from disk or cut short.
    func registerFiles(_ files: [RedactedURL], job: String, time: String, db: Database) throws -> [RedactedURL] {
        let register = try db.cachedStatement(sql: """
            INSERT INTO \(StoreSchema.files) (url, job, status, first_seen) VALUES (?, ?, 'pending', ?)
            ON CONFLICT (url) DO NOTHING
            """)
        let state = try db.cachedStatement(sql: "SELECT status, path, size FROM \(StoreSchema.files) WHERE url = ?")
        var pending: [RedactedURL] = []
        for url in files {
            // A file's URL is record data, stored verbatim in the record itself: kept as the
            // record holds it, so that a device can join on it.
            try register.execute(arguments: [url.real, job, time])
            let row = try Row.fetchOne(state, arguments: [url.real])
            // On disk whole: a file cut short (a power cut before the disk caught up) is fetched again.
            if let row, row["status"] == "ok", let path: String = row["path"], let size: Int = row["size"],
               FileStatus(path: (folder as NSString).appendingPathComponent(path))?.size == size {
                continue
            }
            pending.append(url)
        }
        return pending
    }

    /// The folder the database file lives in: the output folder.
    package var folder: String { Paths.parent(of: path) }

    /// Files of a job that an earlier run registered or tried and did not get.
    package func unfinishedFiles(job: String) async throws -> [String] {
        try await pool.read { db in
            try String.fetchAll(db, sql: """
                SELECT url FROM \(StoreSchema.files) WHERE job = ? AND status IN ('pending', 'failed') ORDER BY first_seen, url
                """, arguments: [job])
        }
    }

    /// Records how downloads ended, in one transaction.
    package func record(files: [FileOutcome]) async throws {
        guard !files.isEmpty else { return }
        try await pool.write { db in
            let update = try db.cachedStatement(sql: """
                UPDATE \(StoreSchema.files) SET status = ?, path = coalesce(?, path), size = coalesce(?, size),
                  content_type = coalesce(?, content_type), sha256 = coalesce(?, sha256), etag = ?, last_modified = ?,
                  http_status = ?, error = ?, attempts = attempts + 1, fetched_at = ?
                WHERE url = ?
                """)
            for file in files {
                try update.execute(arguments: [file.status.rawValue, file.path, file.size, file.contentType, file.sha256,
                                               file.etag, file.lastModified, file.httpStatus, file.error, file.time,
                                               file.url.real])
            }
        }
    }
}
