import Foundation
import GRDB
import Logging
@testable import MirrorReplay
@testable import MirrorServe
import MirrorTestSupport
import NIOHTTP1
import Testing

/// Serves the harness's output folder, keeping at most `pageCache` bytes of replayed pages,
/// while `body` runs, given the server's base URL and its cache.
private func serving<T: Sendable>(_ harness: Harness, pageCache: Int,
                                  _ body: (String, PageCache) async throws -> T) async throws -> T {
    var options = MirrorServer.Options(output: harness.output)
    options.port = 0
    options.pageCache = pageCache
    let server = MirrorServer(options: options)
    return try await server.with(logger: Logger(label: "serve", factory: { _ in SwiftLogNoOpLogHandler() })) { port in
        try await body("http://127.0.0.1:\(port)", server.pages.cache)
    }
}

/// The headers two answers of one page share, whoever sent them.
private func pageHeaders(_ got: Got) -> [String: String] {
    got.headers.filter { ["etag", "content-type", "content-length", "link"].contains($0.key) }
}

@Suite("mirror serve: replayed pages kept as assembled", .timeLimit(.minutes(6)))
struct PageCacheTests {
    @Test("a page asked again is sent from the cache, the same bytes and headers; 304 and HEAD as before")
    func sentAgain() async throws {
        let harness = try Harness()
        let api = EditableAPI([[#"{"id":"1","v":1}"#, #"{"id":"2","v":1}"#], [#"{"id":"3","v":1}"#]])
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(itemsJob(), server: server)
        }
        try await serving(harness, pageCache: 1 << 20) { base, cache in
            let first = try await get(base + "/items?page=1")
            #expect(first.status == 200 && first.text == #"{"data":{"list":[{"id":"1","v":1},{"id":"2","v":1}]}}"#)
            let etag = try #require(first.headers["etag"])
            #expect(cache.statistics.kept == 1 && cache.statistics.hits == 0 && cache.statistics.entries == 1)
            let second = try await get(base + "/items?page=1")
            #expect(cache.statistics.hits == 1 && cache.statistics.kept == 1)
            #expect(second.status == 200 && second.body == first.body && pageHeaders(second) == pageHeaders(first))
            #expect(first.headers["content-type"] == "application/json" && first.headers["content-length"] == "\(first.body.count)")
            // If-None-Match with its tag, weak or in a list: 304, its tag, no body and no Content-Type.
            for condition in [etag, "W/\(etag)", "\"x\", \(etag)", "*"] {
                let same = try await get(base + "/items?page=1", headers: [("If-None-Match", condition)])
                #expect(same.status == 304 && same.body.isEmpty && same.headers["etag"] == etag
                    && same.headers["content-type"] == nil, "\(condition)")
            }
            let other = try await get(base + "/items?page=1", headers: [("If-None-Match", "\"x\"")])
            #expect(other.status == 200 && other.body == first.body)
            let head = try await get(base + "/items?page=1", method: .HEAD)
            #expect(head.status == 200 && head.body.isEmpty && pageHeaders(head) == pageHeaders(first))
            #expect(cache.statistics.hits == 7 && cache.statistics.kept == 1)
            // Another page, and the empty page that ended the walk, are kept apart.
            #expect(try await get(base + "/items?page=2").text == #"{"data":{"list":[{"id":"3","v":1}]}}"#)
            #expect(try await get(base + "/items?page=3").text == #"{"data":{"list":[]}}"#)
            #expect(try await get(base + "/items?page=1").body == first.body)
            #expect(cache.statistics.kept == 3 && cache.statistics.entries == 3 && cache.statistics.hits == 8)
        }
    }

    @Test("a record changed by a run, by an UPDATE or a DELETE on another connection, or a database made again is in the next answer, with a new ETag")
    func neverStale() async throws {
        let harness = try Harness()
        let api = EditableAPI([[#"{"id":"1","v":1}"#, #"{"id":"2","v":1}"#, #"{"id":"3","v":1}"#]])
        let job = itemsJob("on_change: replace")
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(job, server: server)
            try await serving(harness, pageCache: 1 << 20) { base, cache in
                var tags: Set<String> = []
                /// Asks for page 1 twice: the first answer must be `text`, assembled anew
                /// (`kept`) or sent from the cache, with a tag not seen before (`newTag`);
                /// the second the same bytes, from the cache.
                func expectPage(_ text: String, kept: Bool, newTag: Bool = true, _ step: String) async throws {
                    let before = cache.statistics
                    let got = try await get(base + "/items?page=1")
                    #expect(got.status == 200 && got.text == text, "\(step)")
                    #expect(cache.statistics.kept == before.kept + (kept ? 1 : 0), "\(step)")
                    let etag = try #require(got.headers["etag"])
                    #expect(tags.insert(etag).inserted == newTag, "\(step): \(etag)")
                    let again = try await get(base + "/items?page=1")
                    #expect(again.body == got.body && again.headers["etag"] == etag, "\(step)")
                    #expect(cache.statistics.hits == before.hits + (kept ? 1 : 2), "\(step)")
                    #expect(try await get(base + "/items?page=1", headers: [("If-None-Match", etag)]).status == 304, "\(step)")
                }
                try await expectPage(#"{"data":{"list":[{"id":"1","v":1},{"id":"2","v":1},{"id":"3","v":1}]}}"#, kept: true, "first")
                // A run that changes no record commits (its run, its pages' times) but keeps
                // the tag: the kept page is sent, found current by its tag.
                _ = try await harness.run(job, server: server)
                try await expectPage(#"{"data":{"list":[{"id":"1","v":1},{"id":"2","v":1},{"id":"3","v":1}]}}"#, kept: false,
                                     newTag: false, "a run that changes nothing")
                api.set([[#"{"id":"1","v":2}"#, #"{"id":"2","v":1}"#, #"{"id":"3","v":1}"#]])
                _ = try await harness.run(job, server: server)
                try await expectPage(#"{"data":{"list":[{"id":"1","v":2},{"id":"2","v":1},{"id":"3","v":1}]}}"#, kept: true,
                                     "a run that updates record 1")
                let database = try harness.database("t_item.sqlite")
                try await database.write { db in
                    try db.execute(sql: #"UPDATE t_item SET record = '{"id":"2","v":9}' WHERE account = '' AND id = '2'"#)
                }
                try await expectPage(#"{"data":{"list":[{"id":"1","v":2},{"id":"2","v":9},{"id":"3","v":1}]}}"#, kept: true,
                                     "an UPDATE of record 2")
                try await database.write { db in try db.execute(sql: "DELETE FROM t_item WHERE account = '' AND id = '1'") }
                try await expectPage(#"{"data":{"list":[{"id":"2","v":9},{"id":"3","v":1}]}}"#, kept: true, "a DELETE of record 1")
                try database.close()
                // The database made again: another file, another feed, the same request.
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: harness.output + "/t_item.sqlite" + suffix) }
                api.set([[#"{"id":"1","v":3}"#, #"{"id":"3","v":1}"#]])
                _ = try await harness.run(job, server: server)
                try await expectPage(#"{"data":{"list":[{"id":"1","v":3},{"id":"3","v":1}]}}"#, kept: true, "the database made again")
            }
        }
    }

    @Test("a page serve keeps costs its body and less than 1 KB more")
    func cost() async throws {
        let harness = try Harness()
        // 50 records of about 200 bytes each.
        let records = (1...50).map { #"{"id":"1-\#(String(format: "%02d", $0))","text":"\#(String(repeating: "x", count: 180))"}"# }
        try await FixtureServer.with(EditableAPI([records]).handler) { server in
            _ = try await harness.run(itemsJob(), server: server)
        }
        let expected = #"{"data":{"list":[\#(records.joined(separator: ","))]}}"#
        let cost = try await serving(harness, pageCache: 1 << 20) { base, cache in
            let first = try await get(base + "/items?page=1")
            #expect(first.text == expected)
            return cache.statistics.bytes
        }
        // The body's buffer holds the body and no more; headers and key, less than 1 KB.
        #expect(cost > expected.utf8.count && cost < expected.utf8.count + 1024)
    }
}
