import Crypto
package import Foundation
import GRDB
package import MirrorModel

/// A snapshot of a stored folder as `mirror snapshot` lays it out: `t_item.sqlite` (the
/// pages' records, with the pages), `files/3f/cover.jpg`, and `manifest.json` naming both.
package struct SnapshotSource {
    package let folder: String

    /// `pages` pages of 4 records each (`{"id":N,"name":"item N"}`).
    package static func make(pages: Int = 3, file: String = "cover bytes") async throws -> SnapshotSource {
        try await make((1...pages).map { page in
            StoredPage(url: "https://api.example.com/items?page=\(page)",
                       records: (1...4).map { index in
                           let id = (page - 1) * 4 + index
                           return (String(id), #"{"id":\#(id),"name":"item \#(id)"}"#)
                       },
                       envelope: page < pages ? #"{"data":[],"next":"https://api.example.com/items?page=\#(page + 1)"}"# : #"{"data":[]}"#)
        }, file: file)
    }

    /// `pages` as stored in a table with the generated `columns`.
    package static func make(_ pages: [StoredPage], columns: [RecordColumn] = [], file: String = "cover bytes") async throws -> SnapshotSource {
        let stored = try await storedFolder(pages, columns: columns)
        let source = SnapshotSource(folder: stored + "/src")
        try FileManager.default.createDirectory(atPath: source.folder + "/files/3f", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: stored + "/out/t_item.sqlite", toPath: source.folder + "/t_item.sqlite")
        // In rollback-journal mode, as `mirror snapshot` writes its databases.
        try await DatabaseQueue(path: source.folder + "/t_item.sqlite").writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = DELETE")
        }
        try Data(file.utf8).write(to: URL(fileURLWithPath: source.folder + "/files/3f/cover.jpg"))
        try source.writeManifest()
        return source
    }

    package var root: String { (folder as NSString).deletingLastPathComponent }
    package var output: String { root + "/out" }

    package func bytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: folder + "/" + path)) }

    /// `manifest.json` naming the database and the file as they are now.
    package func writeManifest() throws {
        func digest(_ path: String) throws -> (Int, String) {
            let data = try bytes(path)
            return (data.count, SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined())
        }
        let (dbBytes, dbHash) = try digest("t_item.sqlite")
        let (fileBytes, fileHash) = try digest("files/3f/cover.jpg")
        let manifest = SnapshotManifest(
            format: 1, mirrorVersion: "test", createdAt: "2026-11-29T00:00:00.000Z", account: nil,
            databases: [.init(path: "t_item.sqlite", bytes: dbBytes, sha256: dbHash, changesThrough: 0, feed: "f",
                              tables: [.init(name: "t_item", records: 12)], pages: true)],
            files: [.init(path: "files/3f/cover.jpg", bytes: fileBytes, sha256: fileHash)])
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        try encoder.encode(manifest).write(to: URL(fileURLWithPath: folder + "/manifest.json"))
    }
}

/// Serves a folder as a static file server does: `ETag` (the SHA-256 of the bytes) and 304
/// to `If-None-Match`, and `Range: bytes=N-` answered with a 206 (or, not `honouringRange`,
/// with the whole object).
package func staticFiles(_ folder: String, honouringRange: Bool = true) -> @Sendable (FixtureRequest) async -> FixtureResponse {
    { request in
        guard let data = FileManager.default.contents(atPath: folder + request.path) else {
            return .text("not found", status: 404)
        }
        let etag = "\"" + SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() + "\""
        if request.headers["if-none-match"] == etag { return FixtureResponse(status: 304, headers: [("ETag", etag)], body: []) }
        if honouringRange, let range = request.headers["range"], range.hasPrefix("bytes="), range.hasSuffix("-"),
           let start = Int(range.dropFirst(6).dropLast()), start < data.count {
            return FixtureResponse(status: 206, headers: [("ETag", etag), ("Content-Range", "bytes \(start)-\(data.count - 1)/\(data.count)")],
                                   body: Array(data[start...]))
        }
        return FixtureResponse(status: 200, headers: [("ETag", etag)], body: Array(data))
    }
}

package func replicaFolder() -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("mirror-replica-\(UUID().uuidString)")
}

package func names(in folder: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
}

