import Foundation
import MirrorModel
import MirrorReplay
import MirrorStore
import MirrorTestSupport
import Testing

private func item(_ id: Int, _ name: String) -> (id: String, json: String) {
    (String(id), #"{"id":\#(id),"name":"\#(name)"}"#)
}

/// The origin the answers' URLs point to: an app's own, not a server's.
let origin = "http://mirror.local"

/// Whether `tag` is `"<feed>-<seq>-<16 hex digits>"`, as a page's ETag is.
private func isPageTag(_ tag: String) -> Bool {
    tag.wholeMatch(of: #/"[0-9A-Za-z-]*-[0-9]+-[0-9a-f]{16}"/#) != nil
}

private func headerNames(_ headers: [(String, String)]) -> [String] { headers.map(\.0) }

@Suite("replayed pages, answered without a server", .timeLimit(.minutes(6)))
struct ReplayedPagesTests {
    @Test("a stored page: its envelope, its records as the table holds them, the API's URLs pointing to the origin asked")
    func storedPage() async throws {
        let folder = try await storedFolder([StoredPage(
            url: "https://api.example.com/items?page=1", records: [item(1, "a"), item(2, "b")],
            envelope: #"{"data":[],"next":"https://api.example.com/items?page=2"}"#)])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pages = ReplayedPages(output: folder + "/out", cache: PageCache(limit: 1 << 20))
        let answer = try pages.answer(method: "GET", target: "/items?page=1", body: [], origin: origin, ifNoneMatch: nil)
        guard case let .kept(entry, notModified) = answer else { Issue.record("not kept: \(answer)"); return }
        let kept = try #require(entry.answer as? KeptBytes)
        #expect(!notModified && entry.status == 200 && kept.status == 200)
        #expect(String(decoding: kept.body, as: UTF8.self)
            == #"{"data":[{"id":1,"name":"a"},{"id":2,"name":"b"}],"next":"http://mirror.local/items?page=2"}"#)
        #expect(headerNames(kept.headers) == ["Content-Type", "ETag"])
        #expect(kept.headers[0].1 == "application/json")
        #expect(kept.headers[1].1 == entry.etag && isPageTag(entry.etag))
        #expect(pages.cache.statistics.kept == 1 && pages.cache.statistics.hits == 0)
        // Asked again, it comes from the cache: the same entry, the same bytes.
        guard case let .kept(again, _) = try pages.answer(method: "GET", target: "/items?page=1", body: [], origin: origin,
                                                          ifNoneMatch: nil) else { Issue.record("not kept again"); return }
        #expect(try #require(again.answer as? KeptBytes).body == kept.body && again.etag == entry.etag)
        #expect(pages.cache.statistics.kept == 1 && pages.cache.statistics.hits == 1)
    }

    @Test("If-None-Match with the page's tag: 304, its ETag and no body, from the cache and without one")
    func notModified() async throws {
        let folder = try await storedFolder([StoredPage(
            url: "https://api.example.com/items?page=1", records: [item(1, "a")], envelope: #"{"data":[]}"#)])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let cached = ReplayedPages(output: folder + "/out", cache: PageCache(limit: 1 << 20))
        guard case let .kept(entry, _) = try cached.answer(method: "GET", target: "/items?page=1", body: [], origin: origin,
                                                           ifNoneMatch: nil) else { Issue.record("not kept"); return }
        let tag = entry.etag
        guard case let .kept(same, notModified) = try cached.answer(method: "GET", target: "/items?page=1", body: [],
                                                                    origin: origin, ifNoneMatch: "W/\(tag)")
        else { Issue.record("not kept"); return }
        #expect(notModified && same.etag == tag)
        // Without a cache, the page is read again and answered 304 whole.
        let uncached = ReplayedPages(output: folder + "/out", cache: PageCache(limit: 0))
        guard case let .whole(status, headers, body) = try uncached.answer(method: "GET", target: "/items?page=1", body: [],
                                                                           origin: origin, ifNoneMatch: tag)
        else { Issue.record("not whole"); return }
        #expect(status == 304 && headerNames(headers) == ["ETag"] && headers[0].1 == tag && body == [])
        #expect(uncached.cache.statistics == PageCache.Statistics())
    }

    @Test("a page the mirror does not hold: 404, with the pages it holds closest to the request")
    func missing() async throws {
        let folder = try await storedFolder([
            StoredPage(url: "https://api.example.com/items?page=1", records: [item(1, "a")], envelope: #"{"data":[]}"#),
            StoredPage(url: "https://api.example.com/items?page=2", records: [item(2, "b")], envelope: #"{"data":[]}"#),
        ])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pages = ReplayedPages(output: folder + "/out", cache: PageCache(limit: 1 << 20))
        guard case let .whole(status, headers, body) = try pages.answer(method: "GET", target: "/items?page=9", body: [],
                                                                        origin: origin, ifNoneMatch: nil)
        else { Issue.record("not whole"); return }
        #expect(status == 404)
        #expect(headerNames(headers) == ["Content-Type"] && headers[0].1 == "application/json")
        #expect(String(decoding: body, as: UTF8.self)
            == #"{"error":"the mirror holds no page for GET /items?page=9","closest":["/items?page=1","/items?page=2"]}"# + "\n")
    }

    @Test("a page larger than a chunk is streamed: read a piece at a time, in order, to the same bytes")
    func streamed() async throws {
        let filler = String(repeating: "x", count: 1000)
        let records = (1...400).map { item($0, filler) }
        let folder = try await storedFolder([StoredPage(
            url: "https://api.example.com/items?page=1", records: records, envelope: #"{"data":[],"more":true}"#)])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pages = ReplayedPages(output: folder + "/out", cache: PageCache(limit: 64 << 20))
        guard case let .streamed(status, headers, page) = try pages.answer(method: "GET", target: "/items?page=1", body: [],
                                                                           origin: origin, ifNoneMatch: nil)
        else { Issue.record("not streamed"); return }
        defer { page.finish() }
        #expect(status == 200 && headerNames(headers) == ["Content-Type", "ETag"] && headers[0].1 == "application/json")
        var body = page.first
        var cursor = PageStream.Cursor()
        var pieces: [Int] = []
        while !cursor.done {
            let piece = try page.piece(&cursor)
            pieces.append(piece.count)
            body += piece
        }
        body += page.last
        let whole = #"{"data":["# + records.map(\.json).joined(separator: ",") + #"],"more":true}"#
        #expect(body.count > ReplayedPages.chunk)
        #expect(String(decoding: body, as: UTF8.self) == whole)
        // Each piece ends after the record that reaches `piece` bytes, commas between records
        // counted; the last holds the rest (none when the one before ended at the last record).
        var expected: [Int] = []
        var held = 0
        for (index, record) in records.enumerated() {
            held += (index > 0 ? 1 : 0) + record.json.utf8.count
            if held >= ReplayedPages.piece {
                expected.append(held)
                held = 0
            }
        }
        expected.append(held)
        #expect(pieces == expected && pieces.count == 9)
        #expect(pages.cache.statistics.kept == 0)
    }
}
