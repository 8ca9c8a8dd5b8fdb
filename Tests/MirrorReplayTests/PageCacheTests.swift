import Foundation
import MirrorReplay
import MirrorTestSupport
import Testing

@Suite("replayed pages kept as assembled", .timeLimit(.minutes(6)))
struct PageCacheTests {
    @Test("the cache counts its bytes and keeps within its bound, evicting the page sent least recently")
    func bounded() async throws {
        // Five pages of the same size: 50 records of about 200 bytes each.
        let pages = (1...5).map { page in
            (1...50).map { index in
                let id = "\(page)-\(String(format: "%02d", index))"
                return (id: id, json: #"{"id":"\#(id)","text":"\#(String(repeating: "x", count: 180))"}"#)
            }
        }
        let folder = try await storedFolder(pages.enumerated().map { index, records in
            StoredPage(url: "https://api.example.com/items?page=\(index + 1)", records: records, envelope: #"{"data":{"list":[]}}"#)
        })
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let expected = pages.map { #"{"data":{"list":[\#($0.map(\.json).joined(separator: ","))]}}"# }
        /// Asks `replayed` for page `n`, which must be as the API served it.
        func ask(_ replayed: ReplayedPages, _ n: Int) throws {
            let answer = try replayed.answer(method: "GET", target: "/items?page=\(n)", body: [], origin: origin, ifNoneMatch: nil)
            let body: [UInt8]
            switch answer {
            case let .kept(entry, _): body = try #require(entry.answer as? KeptBytes).body
            case let .whole(_, _, whole): body = whole
            case .streamed: Issue.record("page \(n) streamed"); return
            }
            #expect(String(decoding: body, as: UTF8.self) == expected[n - 1], "page \(n)")
        }
        let one = ReplayedPages(output: folder + "/out", cache: PageCache(limit: 1 << 20))
        try ask(one, 1)
        let cost = one.cache.statistics.bytes
        #expect(cost > expected[0].utf8.count)
        // Room for two pages and a half.
        let limit = cost * 5 / 2
        let replayed = ReplayedPages(output: folder + "/out", cache: PageCache(limit: limit))
        let cache = replayed.cache
        func ask(_ n: Int) throws {
            try ask(replayed, n)
            #expect(cache.statistics.bytes <= limit, "page \(n)")
        }
        for page in 1...5 {
            try ask(page)
            #expect(cache.statistics.entries == min(page, 2), "page \(page)")
        }
        #expect(cache.statistics.kept == 5 && cache.statistics.evicted == 3 && cache.statistics.hits == 0)
        // Pages 4 and 5 are kept; 4 sent now makes 5 the least recently sent.
        try ask(4)
        #expect(cache.statistics.hits == 1)
        try ask(1)
        #expect(cache.statistics.kept == 6 && cache.statistics.evicted == 4 && cache.statistics.hits == 1)
        try ask(4)
        try ask(1)
        #expect(cache.statistics.hits == 3 && cache.statistics.kept == 6)
        try ask(5)
        #expect(cache.statistics.kept == 7 && cache.statistics.entries == 2)
        // No cache: every answer is assembled, none kept.
        let uncached = ReplayedPages(output: folder + "/out", cache: PageCache(limit: 0))
        for _ in 0..<2 { try ask(uncached, 2) }
        #expect(uncached.cache.statistics == PageCache.Statistics())
    }
}
