import Foundation
import GRDB
@testable import MirrorModel
@testable import MirrorStore
import MirrorTestSupport
import Testing

/// `count` records `{"id":"<first + i>","x":"…"}` of about `size` bytes each, as a page's records.
private func records(from first: Int, count: Int, size: Int) -> PageRecords {
    var bytes: [UInt8] = [UInt8(ascii: "[")]
    var entries: [PageRecords.Entry] = []
    let filler = String(repeating: "x", count: size)
    for index in 0 ..< count {
        if index > 0 { bytes.append(UInt8(ascii: ",")) }
        let start = bytes.count
        let id = String(first + index)
        bytes.append(contentsOf: #"{"id":""#.utf8)
        let idStart = bytes.count
        bytes.append(contentsOf: id.utf8)
        let idEnd = bytes.count
        bytes.append(contentsOf: #"","x":"\#(filler)"}"#.utf8)
        entries.append(PageRecords.Entry(start: UInt32(start), end: UInt32(bytes.count), idStart: UInt32(idStart),
                                         idEnd: UInt32(idEnd)))
    }
    bytes.append(UInt8(ascii: "]"))
    return PageRecords(bytes: bytes, entries: entries, unescaped: [])
}

private func fileSize(_ path: String) -> Int {
    (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
}

@Suite("the WAL copied while pages are stored", .timeLimit(.minutes(6)))
struct WALCopyTests {
    @Test("a page's commit copies no WAL, however large; past 4 MB of pages the checkpointer copies it into the file")
    func copiedBesideTheWriter() async throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/t_item.sqlite"
        let store = try TableStore(path: path)
        try await store.prepare(table: "t_item")
        _ = try await store.startWalk(job: "items", account: "", table: "t_item", at: "2026-11-27T00:00:00Z", fresh: true)
        func commit(_ page: Int, records: PageRecords, responseBytes: Int) async throws {
            let counts = try await store.commit(PageCommit(
                job: "items", account: "", table: "t_item",
                url: RedactedURL(real: "http://127.0.0.1:1/items?page=\(page)", redactor: Redactor(secrets: [])), requestBody: "",
                page: page, status: 200, responseBytes: responseBytes, records: records, elements: records.count,
                onChange: .replace, firstPosition: (page - 1) * 600, nextPage: page + 1, time: "2026-11-27T00:00:00Z"))
            #expect(counts.new == records.count)
        }
        // 6 MB of records, over SQLite's own automatic checkpoint (1,000 pages of 4 KB), said
        // to be a 1 MB response: nothing is copied.
        try await commit(1, records: records(from: 0, count: 600, size: 10_000), responseBytes: 1 << 20)
        await store.checkpointer.idle()
        #expect(fileSize(path) < 1 << 20)
        #expect(fileSize(path + "-wal") > 6_000_000)
        // 4 MB of responses in all: the WAL is copied, beside the writer.
        try await commit(2, records: records(from: 600, count: 1, size: 100), responseBytes: 3 << 20)
        await store.checkpointer.idle()
        #expect(fileSize(path) > 6_000_000)
        try await store.checkpoint()
        #expect(fileSize(path + "-wal") == 0)
        #expect(try await DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM t_item") } == 601)
    }
}
