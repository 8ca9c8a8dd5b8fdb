import Foundation
package import MirrorModel
import MirrorStore

/// A page as a run stores it: its URL, its records (id and JSON text) and its envelope, the
/// response with `[]` where its records were.
package struct StoredPage: Sendable {
    package var url: String
    package var records: [(id: String, json: String)]
    package var envelope: String

    package init(url: String, records: [(id: String, json: String)], envelope: String) {
        self.url = url
        self.records = records
        self.envelope = envelope
    }
}

/// A fresh temporary folder whose `out/t_item.sqlite` holds `pages`, committed through
/// MirrorStore's own API as a run commits them, in a table with the generated `columns`;
/// the caller removes the folder.
package func storedFolder(_ pages: [StoredPage], columns: [RecordColumn] = []) async throws -> String {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mirror-replay-\(UUID().uuidString)").path
    let output = folder + "/out"
    try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
    let store = try TableStore(path: output + "/t_item.sqlite")
    _ = try await store.prepare(table: "t_item", columns: columns)
    _ = try await store.startWalk(job: "items", account: "", table: "t_item", at: "2026-11-29T00:00:00Z", fresh: true)
    var position = 0
    for (index, page) in pages.enumerated() {
        var builder = PageRecords.Builder(capacity: 0, count: page.records.count)
        for record in page.records {
            Array(record.id.utf8).withUnsafeBufferPointer { id in
                builder.append(id: id) { $0.append(contentsOf: record.json.utf8) }
            }
        }
        let text = Array(page.envelope.utf8)
        guard let hole = page.envelope.range(of: "[]") else { throw NoPlaceForRecords(envelope: page.envelope) }
        let recordsAt = hole.lowerBound.utf16Offset(in: page.envelope)
        _ = try await store.commit(PageCommit(
            job: "items", account: "", table: "t_item", url: RedactedURL(real: page.url, redactor: Redactor(secrets: [])),
            requestBody: "", page: index + 1, status: 200, responseBytes: text.count, records: builder.records,
            envelope: PageEnvelope(text: text, recordsAt: recordsAt), elements: page.records.count, onChange: .replace,
            firstPosition: position, nextPage: index + 2, time: "2026-11-29T00:00:00Z"))
        position += page.records.count
    }
    // As a walk ends: the columns made, then their indexes.
    try await store.completeColumns(table: "t_item", columns: columns)
    try await store.indexColumns(table: "t_item", columns: columns)
    try await store.checkpoint()
    return folder
}

/// An envelope without the `[]` its records go in.
package struct NoPlaceForRecords: Error {
    package let envelope: String
}
