import Foundation
@testable import MirrorExport
import MirrorFiles
@testable import MirrorModel
@testable import MirrorStore
import MirrorTestSupport

/// An output folder whose databases are written through MirrorStore's own API, as a run
/// writes them, then exported.
struct Stored {
    let temporary: TemporaryFolder
    var folder: String { temporary.path }
    var output: String { folder + "/cache" }

    init() throws {
        temporary = try TemporaryFolder()
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
    }

    /// Commits `pages` (each a list of id and record JSON) for `account` into `table` of
    /// `database`, walk positions counted from 0.
    func store(_ pages: [[(id: String, json: String)]], account: String = "", table: String = "t_item",
               database: String = "t_item.sqlite", firstPage: Int = 1) async throws {
        let store = try TableStore(path: output + "/" + database)
        try await store.prepare(table: table)
        _ = try await store.startWalk(job: "items", account: account, table: table, at: "2026-11-29T00:00:00Z", fresh: true)
        var position = 0
        for (index, page) in pages.enumerated() {
            var builder = PageRecords.Builder(capacity: 0, count: page.count)
            for record in page {
                Array(record.id.utf8).withUnsafeBufferPointer { id in
                    builder.append(id: id) { $0.append(contentsOf: record.json.utf8) }
                }
            }
            let number = firstPage + index
            _ = try await store.commit(PageCommit(
                job: "items", account: account, table: table,
                url: RedactedURL(real: "http://127.0.0.1:1/x?page=\(number)", redactor: Redactor(secrets: [])),
                requestBody: "", page: number, status: 200, responseBytes: 0, records: builder.records,
                elements: page.count, onChange: .replace, firstPosition: position, nextPage: number + 1,
                time: "2026-11-29T00:00:00Z"))
            position += page.count
        }
        try await store.checkpoint()
    }

    /// Runs an export into a string.
    func export(_ options: Exporter.Options) throws -> String {
        let path = folder + "/export-\(UUID().uuidString)"
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var sink = OutputSink(descriptor: descriptor)
        let database = try RecordReader.locate(table: options.selection.table, in: output)
        try Exporter(database: database, options: options).export(to: &sink)
        close(descriptor)
        return try String(contentsOfFile: path, encoding: .utf8)
    }
}
