import AsyncHTTPClient
import Crypto
import Foundation
import GRDB
@testable import MirrorDownload
@testable import MirrorHTTP
@testable import MirrorJobFile
@testable import MirrorJSON
@testable import MirrorModel
@testable import MirrorStore
@testable import MirrorReplay
@testable import MirrorServe
import MirrorTestSupport
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

/// An API that keeps each request and what it answered: a replay is compared with it.
final class KeptAnswers: Sendable {
    private let kept = Mutex<[(request: FixtureRequest, body: [UInt8])]>([])

    func keeping(_ answer: @escaping @Sendable (FixtureRequest) -> FixtureResponse) -> @Sendable (FixtureRequest) async -> FixtureResponse {
        { request in
            let response = answer(request)
            self.kept.withLock { $0.append((request, response.body)) }
            return response
        }
    }

    var all: [(request: FixtureRequest, body: [UInt8])] { kept.withLock { $0 } }
}

/// What a replay of `served` must be: the same JSON, compacted, with the API's URLs
/// pointing to the server and the secret masked.
private func replayOf(_ served: [UInt8], api: String, server: String, secret: String? = nil) throws -> String {
    var text = String(decoding: try JSONDocument(parsing: served).bytes, as: UTF8.self)
        .replacingOccurrences(of: api, with: server)
    if let secret { text = text.replacingOccurrences(of: secret, with: "REDACTED") }
    return text
}

/// Replays each request `kept` saw that the walk stored (up to the empty page that ended
/// it: pages asked for ahead of the end are not), the secret in it replaced by `sent`, and
/// checks each answer is the page as it was served; returns the targets replayed.
@discardableResult
private func replayAll(_ kept: KeptAnswers, server: String, secret: String? = nil, sent: String = "other",
                       stored: (FixtureRequest) -> Bool = { _ in true }) async throws -> [String] {
    var targets: [String] = []
    for (request, served) in kept.all where stored(request) {
        let target = secret.map { request.target.replacingOccurrences(of: $0, with: sent) } ?? request.target
        let body = secret.map { String(decoding: request.body, as: UTF8.self).replacingOccurrences(of: $0, with: sent) }
            .map { Array($0.utf8) } ?? request.body
        let got = try await get(server + target, method: request.method == "POST" ? .POST : .GET,
                                body: request.method == "POST" ? body : nil)
        #expect(got.status == 200, "\(request.method) \(target): \(got.text)")
        #expect(got.text == (try replayOf(served, api: request.base, server: server, secret: secret)), "\(target)")
        if let secret { #expect(!got.text.contains(secret) && !got.headers.values.contains { $0.contains(secret) }) }
        targets.append(target)
    }
    return targets
}

@Suite("mirror serve: the API's own URLs", .timeLimit(.minutes(6)))
struct ReplayTests {
    @Test("a page walk with a secret in its URL: every page, the empty last one too, without the secret and never sending it")
    func pageWalk() async throws {
        let harness = try Harness()
        let kept = KeptAnswers()
        let secret = "s3cr3t-Kq9"
        try await FixtureServer.with(kept.keeping { request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            let list = page <= 2 ? #"{"id":12345678901234567890\#(page),"price":1.10,"name":"n\#(page)"},{"id":"b\#(page)","tags":[]}"# : ""
            return .json(#"{"data":{"list":[\#(list)],"page":\#(page)},"links":{"next":"\#(request.base)/items?page=\#(page + 1)&key=\#(secret)","help":"https://elsewhere.example/items"}}"#)
        }) { server in
            _ = try await harness.run(itemsJob(url: "BASE/items?page={page}&key=${KEY}"), server: server, environment: ["KEY": secret])
        }
        try await serving(harness) { base in
            let targets = try await replayAll(kept, server: base, secret: secret) { Int($0.parameter("page") ?? "")! <= 3 }
            #expect(targets.sorted() == ["/items?page=1&key=other", "/items?page=2&key=other", "/items?page=3&key=other"])
            let page = try await get(base + "/items?page=1&key=REDACTED")
            #expect(page.text == #"{"data":{"list":[{"id":123456789012345678901,"price":1.10,"name":"n1"},{"id":"b1","tags":[]}],"page":1},"#
                + #""links":{"next":"\#(base)/items?page=2&key=REDACTED","help":"https://elsewhere.example/items"}}"#)
            #expect(page.headers["content-type"] == "application/json" && page.headers["link"] == nil)
            // The secret is not needed at all.
            #expect(try await get(base + "/items?key=x&page=2").text == (try await get(base + "/items?page=2")).text)
            let missing = try await get(base + "/items?page=9")
            #expect(missing.status == 404)
            #expect(missing.text == #"{"error":"the mirror holds no page for GET /items?page=9","closest":["#
                + #""/items?page=1&key=REDACTED","/items?page=2&key=REDACTED","/items?page=3&key=REDACTED"]}"# + "\n")
            #expect(try await get(base + "/items?page=1&key=x&more=1").status == 404)
            #expect(try await get(base + "/items", method: .DELETE).status == 405)
        }
    }

    @Test("a secret is masked in the envelope's strings only, and a Host that is not a plain host and port is not put into it")
    func maskedStrings() async throws {
        let harness = try Harness()
        let kept = KeptAnswers()
        try await FixtureServer.with(kept.keeping { request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            let list = page == 1 ? #"{"id":"a","total":99999900}"# : ""
            return .json(#"{"data":{"list":[\#(list)]},"total":99999900,"note":"account 999999","999999":true,"next":"\#(request.base)/items?page=\#(page + 1)"}"#)
        }) { server in
            _ = try await harness.run(itemsJob("headers: { X-Account: \"${ACCOUNT}\" }"), server: server, environment: ["ACCOUNT": "999999"])
        }
        try await serving(harness) { base in
            let page = try await get(base + "/items?page=1")
            // (A port has 5 digits at most: the secret is in no URL.)
            #expect(page.text == #"{"data":{"list":[{"id":"a","total":99999900}]},"total":99999900,"note":"account REDACTED","REDACTED":true,"next":"\#(base)/items?page=2"}"#)
            #expect((try? JSONDocument(parsing: page.body)) != nil)
            let port = base.split(separator: ":").last!
            for host in [#"127.0.0.1:\#(port)"],"x"#, "localhost:1\\", "127.0.0.1:99999999"] {
                let odd = try await get(base + "/items?page=1", headers: [("Host", host)])
                #expect(odd.status == 200 && odd.text.contains(#""next":"http://127.0.0.1:\#(port)/items?page=2""#), "\(host): \(odd.text)")
            }
            #expect(try await get(base + "/items?page=1", headers: [("Host", "localhost:\(port)")]).text
                .contains(#""next":"http://localhost:\#(port)/items?page=2""#))
        }
    }

    @Test("a page kept before envelopes were is fetched whole by the next run, though the API would answer 304")
    func pageWithoutEnvelope() async throws {
        let harness = try Harness()
        let handler: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            let etag = "\"p\(page)\""
            if request.headers["if-none-match"] == etag { return FixtureResponse(status: 304, headers: [("ETag", etag)], body: []) }
            return .json(PagedAPI(ids: [["1", "2"]]).body(page: page), headers: [("ETag", etag)])
        }
        try await FixtureServer.with(handler) { server in
            _ = try await harness.run(itemsJob(), server: server)
            try await harness.database("t_item.sqlite").write { db in
                try db.execute(sql: "UPDATE _mirror_pages SET envelope = NULL, records_at = NULL")
            }
            try await serving(harness) { base in
                let got = try await get(base + "/items?page=1")
                #expect(got.status == 404)
            }
            let summary = try await harness.run(itemsJob(), server: server)
            #expect(summary.jobs[0].pages.notModified == 0)
            try await serving(harness) { base in
                let got = try await get(base + "/items?page=1")
                #expect(got.text == #"{"data":{"list":[{"id":"1","page":1},{"id":"2","page":1}],"page":1}}"#)
            }
            let again = try await harness.run(itemsJob(), server: server)
            #expect(again.jobs[0].pages.notModified == 1)
        }
    }

    @Test("requests match in any query order, + as %20, %2F apart from /, a masked value for any value or none")
    func requestMatching() {
        let stored = PageRequest(url: "https://api.example.com/v1/a%20b/items?q=x+y&page=2&key=REDACTED")
        #expect(stored.key == "/v1/a%20b/items?page=2&q=x%20y")
        #expect(PageRequest(url: "/v1/a b/items?page=2&q=x%20y&key=zzz").matches(stored))
        #expect(PageRequest(url: "/v1/a%20b/items?q=x+y&page=2").matches(stored))
        #expect(!PageRequest(url: "/v1/a%20b/items?q=x+y&page=2&key=1&key=2").matches(stored))
        #expect(!PageRequest(url: "/v1/a%20b/items?q=x+y&page=3").matches(stored))
        #expect(!PageRequest(url: "/v1/a%2Fb").matches(PageRequest(url: "http://h/v1/a/b")))
        #expect(PageRequest(url: "/bot123:abc/getUpdates?offset=5").matches(PageRequest(url: "https://h/botREDACTED/getUpdates?offset=5")))
        #expect(PageRequest.fits("abc", "aREDACTEDc") && !PageRequest.fits("ac", "acREDACTEDc") && PageRequest.fits("Bearer x", "Bearer REDACTED"))
        #expect(PageRequest.bodyMatches(Array(#"{"b":[1,"t"],"a":"z"}"#.utf8), stored: #"{"a":"REDACTED","b":[1,"t"]}"#))
        #expect(!PageRequest.bodyMatches(Array(#"{"b":[1,"t"],"a":"z","c":1}"#.utf8), stored: #"{"a":"REDACTED","b":[1,"t"]}"#))
        #expect(PageRequest.bodyMatches(Array("q=a&token=t0k".utf8), stored: "q=a&token=REDACTED"))
        #expect(PageRequest.bodyMatches(Array(#"{"account":7}"#.utf8), stored: #"{"account":REDACTED}"#))
    }

    @Test("offset and cursor walks are answered request for request, numbers digit for digit")
    func offsetAndCursor() async throws {
        let harness = try Harness()
        let kept = KeptAnswers()
        let records = (1...5).map { #"{"id":"\#($0)","n":9007199254740993\#($0),"x":-0.5e-7}"# }
        try await FixtureServer.with(kept.keeping { request in
            if request.path == "/offset" {
                let offset = Int(request.parameter("offset") ?? "") ?? 0
                return .json(#"{"items":[\#(records.dropFirst(offset).prefix(2).joined(separator: ","))],"offset":\#(offset)}"#)
            }
            let after = Int(request.parameter("after") ?? "") ?? 0
            let next = after + 2 < records.count ? "\"\(after + 2)\"" : "null"
            return .json(#"{"items":[\#(records.dropFirst(after).prefix(2).joined(separator: ","))],"meta":{"next":\#(next)}}"#)
        }) { server in
            _ = try await harness.run("""
                version: 1
                jobs:
                  - name: by_offset
                    url: "BASE/offset?offset={page}&limit=2"
                    pages: { from: 0, step: 2 }
                    records: items
                    id: id
                    table: t_offset
                  - name: by_cursor
                    url: "BASE/cursor?after={cursor}"
                    next: meta.next
                    records: items
                    id: id
                    table: t_cursor
                """, server: server)
        }
        try await serving(harness) { base in
            let targets = try await replayAll(kept, server: base) { $0.path == "/cursor" || Int($0.parameter("offset") ?? "")! <= 6 }
            #expect(Set(targets) == ["/offset?offset=0&limit=2", "/offset?offset=2&limit=2", "/offset?offset=4&limit=2",
                                     "/offset?offset=6&limit=2", "/cursor", "/cursor?after=2", "/cursor?after=4"])
            #expect(try await get(base + "/offset?limit=2&offset=2").text == (try await get(base + "/offset?offset=2&limit=2")).text)
        }
    }

    @Test("next URLs and Link headers lead a client through the server, page after page")
    func followingNext() async throws {
        let harness = try Harness()
        try await FixtureServer.with { request in
            let page = Int(request.parameter("page") ?? "") ?? 1
            if request.path == "/linked" {
                let link = page < 3 ? [("Link", "<\(request.base)/linked?page=\(page + 1)>; rel=\"next\"")] : []
                return .json(#"[{"id":"L\#(page)"}]"#, headers: link)
            }
            // Absolute, then relative, then none.
            let next = page == 1 ? "\"\(request.base)/next?page=2\"" : page == 2 ? #""\/next?page=3""# : "null"
            return .json(#"{"list":[{"id":"N\#(page)"}],"next":\#(next)}"#)
        } _: { server in
            _ = try await harness.run("""
                version: 1
                jobs:
                  - name: nexts
                    url: "BASE/next?page=1"
                    next: next
                    records: list
                    id: id
                    table: t_next
                  - name: linked
                    url: "BASE/linked"
                    next: link
                    records: .
                    id: id
                    table: t_linked
                """, server: server)
        }
        try await serving(harness) { base in
            var url: String? = base + "/next?page=1"
            var ids: [String] = []
            var nexts: [String] = []
            while let current = url {
                let got = try await get(current)
                #expect(got.status == 200)
                let document = try JSONDocument(parsing: got.body)
                ids += document.root["list"]!.elements.compactMap { $0["id"]?.stringValue }
                url = document.root["next"]?.stringValue.map { $0.hasPrefix("/") ? base + $0 : $0 }
                if let url { nexts.append(url) }
            }
            #expect(ids == ["N1", "N2", "N3"])
            #expect(nexts == [base + "/next?page=2", base + "/next?page=3"])
            url = base + "/linked"
            ids = []
            while let current = url {
                let got = try await get(current)
                ids += try JSONDocument(parsing: got.body).root.elements.compactMap { $0["id"]?.stringValue }
                url = got.headers["link"].flatMap { LinkHeader.next(in: $0, base: current) }
            }
            #expect(ids == ["L1", "L2", "L3"])
            #expect(try await get(base + "/linked?page=2").headers["link"] == "<\(base)/linked?page=3>; rel=\"next\"")
        }
    }

    @Test("the API's headers are replayed with its URLs pointing here: a client paging by Link or X-Pagination walks the replay as it walked the API")
    func keptHeaders() async throws {
        let harness = try Harness()
        let secret = "s3cr3t-t0ken"
        // Datasette's rows with a body next_url and a Link header; flask-smorest's
        // X-Pagination; a cookie, an echoed secret and hop-by-hop headers that stay behind.
        try await FixtureServer.with { request in
            let page = Int(request.parameter("_next") ?? "") ?? 1
            let next = page < 3 ? "\(request.base)/db/t.json?_next=\(page + 1)" : nil
            var headers = [("X-Pagination", #"{"total":3,"page":\#(page)\#(next.map { #","next":"\#($0)""# } ?? "")}"#),
                           ("Set-Cookie", "session=abc"), ("X-Echo", "key=\(secret)"), ("Keep-Alive", "timeout=5"),
                           ("Connection", "X-Hop"), ("X-Hop", "1"), ("X-Total-Count", "3")]
            if let next { headers.append(("Link", "<\(next)>; rel=\"next\"")) }
            return .json(#"{"rows":[{"id":\#(page)}],"next_url":\#(next.map { "\"\($0)\"" } ?? "null")}"#, headers: headers)
        } _: { server in
            _ = try await harness.run("""
                version: 1
                jobs:
                  - name: rows
                    url: "BASE/db/t.json?key=${KEY}"
                    next: next_url
                    records: rows
                    id: id
                    table: t_row
                """, server: server, environment: ["KEY": secret])
        }
        let stored = try await harness.database("t_row.sqlite").read { db in
            try String.fetchAll(db, sql: "SELECT headers FROM _mirror_pages ORDER BY page, url")
        }
        #expect(stored.count == 3)
        #expect(stored.allSatisfy { !$0.contains(secret) && !$0.contains("session") && !$0.contains("x-hop") && !$0.contains("keep-alive") })
        #expect(stored.first?.hasPrefix(#"[["content-type","application/json"],["link",""#) == true)
        try await serving(harness) { base in
            // A client following Link, as dlt's RESTClient does.
            var url: String? = base + "/db/t.json?key=any"
            var ids: [String] = []
            var paginations: [String] = []
            while let current = url {
                let got = try await get(current)
                #expect(got.status == 200)
                #expect(got.headers["x-total-count"] == "3" && got.headers["set-cookie"] == nil && got.headers["x-echo"] == nil)
                #expect(got.headers["x-hop"] == nil && got.headers["keep-alive"] == nil)
                ids += try JSONDocument(parsing: got.body).root["rows"]!.elements.compactMap { $0["id"]?.rawText }
                paginations.append(got.headers["x-pagination"] ?? "")
                url = got.headers["link"].flatMap { LinkHeader.next(in: $0, base: current) }
            }
            #expect(ids == ["1", "2", "3"])
            #expect(paginations == [#"{"total":3,"page":1,"next":"\#(base)/db/t.json?_next=2"}"#,
                                    #"{"total":3,"page":2,"next":"\#(base)/db/t.json?_next=3"}"#,
                                    #"{"total":3,"page":3}"#])
        }
    }

    @Test("a query pair asked twice with the same value is the pair once: FastAPI's page=1&size=100&page=1")
    func repeatedPair() async throws {
        let stored = PageRequest(url: "http://h/items?page=1&size=100")
        #expect(PageRequest(url: "/items?page=1&size=100&page=1").matches(stored))
        #expect(PageRequest(url: "/items?page=1&size=100&page=1").probes.contains(stored.key))
        #expect(!PageRequest(url: "/items?page=1&size=100&page=2").matches(stored))
        let harness = try Harness()
        try await FixtureServer.with { request in
            let page = Int(request.parameter("page") ?? "") ?? 1
            return .json(#"{"data":{"list":[{"id":\#(page)}]},"page":\#(page)}"#)
        } _: { server in
            _ = try await harness.run(itemsJob("pages: { to: 2 }", url: "BASE/items?page={page}&size=100"), server: server)
        }
        try await serving(harness) { base in
            let once = try await get(base + "/items?page=2&size=100")
            let twice = try await get(base + "/items?page=2&size=100&page=2")
            #expect(once.status == 200 && twice.status == 200)
            #expect(twice.text == #"{"data":{"list":[{"id":2}]},"page":2}"#)
            #expect(try await get(base + "/items?page=2&size=100&page=1").status == 404)
        }
    }

    @Test("a POST walk is answered for the same body, its secret not needed, and only for it")
    func postBodies() async throws {
        let harness = try Harness()
        let kept = KeptAnswers()
        let secret = "tok-Z81x"
        try await FixtureServer.with(kept.keeping { request in
            let body = try? JSONDocument(parsing: request.body)
            let after = body?.root["after"]?.stringValue ?? ""
            return .json(after.isEmpty ? #"{"hits":[{"id":"a"}],"meta":{"next":"c2"}}"# : #"{"hits":[{"id":"b"}],"meta":{"next":null}}"#)
        }) { server in
            _ = try await harness.run("""
                version: 1
                jobs:
                  - name: search
                    url: "BASE/search"
                    method: POST
                    body: { after: "{cursor}", token: "${TOKEN}", size: 1 }
                    next: meta.next
                    records: hits
                    id: id
                    table: t_hit
                """, server: server, environment: ["TOKEN": secret])
        }
        #expect(kept.all.map { String(decoding: $0.request.body, as: UTF8.self) }
            == [#"{"token":"tok-Z81x","size":1}"#, #"{"after":"c2","token":"tok-Z81x","size":1}"#])
        try await serving(harness) { base in
            try await replayAll(kept, server: base, secret: secret)
            // The same value in another order and spacing is the same body.
            let reordered = try await get(base + "/search", method: .POST, body: Array(#"{ "size": 1, "token": "x", "after": "c2" }"#.utf8))
            #expect(reordered.text == #"{"hits":[{"id":"b"}],"meta":{"next":null}}"#)
            #expect(try await get(base + "/search", method: .POST, body: Array(#"{"after":"c3","token":"x","size":1}"#.utf8)).status == 404)
            #expect(try await get(base + "/search").status == 404)
        }
    }

    @Test("ETag and If-None-Match: 304 while nothing changed, the records as stored now once they have")
    func revalidation() async throws {
        let harness = try Harness()
        let api = EditableAPI([[#"{"id":"1","v":1}"#, #"{"id":"2","v":1}"#]])
        let job = itemsJob("on_change: replace")
        // One API server for every run: its pages keep their URLs.
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(job, server: server)
            try await serving(harness) { base in
                let first = try await get(base + "/items?page=1")
                let etag = try #require(first.headers["etag"])
                #expect(first.text == #"{"data":{"list":[{"id":"1","v":1},{"id":"2","v":1}]}}"#)
                let same = try await get(base + "/items?page=1", headers: [("If-None-Match", etag)])
                #expect(same.status == 304 && same.body.isEmpty && same.headers["etag"] == etag)
                #expect(try await get(base + "/items?page=1", method: .HEAD).headers["etag"] == etag)
                // A run that changes nothing keeps the tag.
                _ = try await harness.run(job, server: server)
                let kept = try await get(base + "/items?page=1", headers: [("If-None-Match", etag)])
                #expect(kept.status == 304, "\(etag) became \(kept.headers["etag"] ?? "none")")
                api.set([[#"{"id":"1","v":2}"#, #"{"id":"2","v":1}"#]])
                _ = try await harness.run(job, server: server)
                let changed = try await get(base + "/items?page=1", headers: [("If-None-Match", etag)])
                #expect(changed.status == 200 && changed.text == #"{"data":{"list":[{"id":"1","v":2},{"id":"2","v":1}]}}"#)
                let newTag = try #require(changed.headers["etag"])
                #expect(newTag != etag)
                #expect(try await get(base + "/items?page=1", headers: [("If-None-Match", "\"x\", \(newTag)")]).status == 304)
            }
        }
    }

    @Test("a page larger than a chunk is streamed whole, in one read transaction, while a run rewrites it")
    func largePage() async throws {
        let harness = try Harness()
        let version = Mutex(1)
        // 3,000 records of about 120 bytes: 360 KB, more than one chunk.
        let answer: @Sendable (FixtureRequest) -> FixtureResponse = { request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            guard page == 1 else { return .json(#"{"data":{"list":[]}}"#) }
            let v = version.withLock { $0 }
            let list = (1...3000).map { #"{"id":"r\#($0)","v":\#(v),"n":123456789012345678901234567890,"text":"\#(String(repeating: "x", count: 60))"}"# }
            return .json(#"{"data":{"list":[\#(list.joined(separator: ","))],"page":1}}"#)
        }
        let kept = KeptAnswers()
        let job = itemsJob("on_change: replace")
        try await FixtureServer.with(kept.keeping(answer)) { server in _ = try await harness.run(job, server: server) }
        let firstPage: (FixtureRequest) -> Bool = { $0.parameter("page") == "1" || $0.parameter("page") == "2" }
        #expect(kept.all.first { $0.request.parameter("page") == "1" }!.body.count > ReplayedPages.chunk)
        try await serving(harness) { base in
            #expect(try await replayAll(kept, server: base, stored: firstPage).sorted() == ["/items?page=1", "/items?page=2"])
            let head = try await get(base + "/items?page=1", method: .HEAD)
            #expect(head.status == 200 && head.body.isEmpty && head.headers["etag"] != nil)
            version.withLock { $0 = 2 }
            try await FixtureServer.with(answer) { server in
                async let run = harness.run(job, server: server)
                var seen: Set<Int> = []
                for _ in 0..<12 {
                    let got = try await get(base + "/items?page=1")
                    let versions = Set(try JSONDocument(parsing: got.body).root["data"]!["list"]!.elements.compactMap { $0["v"]?.intValue })
                    #expect(versions.count == 1, "a page mixes versions \(versions)")
                    seen.formUnion(versions)
                    #expect(got.body.count > ReplayedPages.chunk)
                }
                _ = try await run
                #expect(seen.isSubset(of: [1, 2]))
            }
            let after = try JSONDocument(parsing: try await get(base + "/items?page=1").body)
            #expect(after.root["data"]!["list"]!.elements.map { $0["v"]?.intValue } == Array(repeating: 2, count: 3000))
        }
    }

    @Test("a page the API labelled text/html is shown, never run: its answers carry the files' nosniff and sandbox")
    func sandboxedPages() async throws {
        let harness = try Harness()
        let script = #"<script>fetch('/_mirror/tables').then(r => r.text()).then(t => navigator.sendBeacon('/x', t))</script>"#
        let image = Array("GIF89a".utf8)
        let handler: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
            if request.path == "/f/a.gif" { return FixtureResponse(headers: [("Content-Type", "image/gif")], body: image) }
            let page = Int(request.parameter("page") ?? "") ?? 0
            let list = page == 1 ? #"{"id":"1","note":"\#(script)","f":"http://\#(request.authority)/f/a.gif"}"# : ""
            return FixtureResponse(headers: [("Content-Type", "text/html")], body: Array(#"{"data":{"list":[\#(list)]}}"#.utf8))
        }
        var path = ""
        try await FixtureServer.with(handler) { server in
            _ = try await harness.run(itemsJob("downloads: [f]"), server: server)
            path = FileNaming.relativePath(for: "\(server.base)/f/a.gif")
        }
        // The answer's status and its headers in order, names lowercased, but the date.
        func fields(_ url: String, headers: [(String, String)] = [], method: NIOHTTP1.HTTPMethod = .GET) async throws -> [String] {
            var request = HTTPClientRequest(url: url)
            request.method = method
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            let response = try await AsyncHTTPClient.HTTPClient.shared.execute(request, timeout: .seconds(60))
            _ = try await response.body.collect(upTo: 1 << 20)
            return ["\(response.status.code)"] + response.headers.filter { $0.name.lowercased() != "date" }
                .map { "\($0.name.lowercased()): \($0.value)" }
        }
        try await serving(harness) { base in
            // Assembled, then sent again from the cache (the page kept in one buffer with its head).
            let assembled = try await fields(base + "/items?page=1")
            let page = try await get(base + "/items?page=1")
            #expect(page.text.contains(script))
            let etag = try #require(page.headers["etag"])
            // The files' two headers, then the server's name.
            let sandboxed = ["content-security-policy: sandbox", "x-content-type-options: nosniff", "server: mirror"]
            let whole = ["200", "content-type: text/html", "etag: \(etag)", "content-length: \(page.body.count)"] + sandboxed
            let kept = try await fields(base + "/items?page=1")
            let head = try await fields(base + "/items?page=1", method: .HEAD)
            #expect(assembled == whole && kept == whole && head == whole)
            let notModified = try await fields(base + "/items?page=1", headers: [("If-None-Match", etag)])
            #expect(notModified == ["304", "etag: \(etag)"] + sandboxed)
            let missing = try await get(base + "/items?page=9")
            let missingFields = try await fields(base + "/items?page=9")
            #expect(missingFields == ["404", "content-type: application/json", "content-length: \(missing.body.count)"] + sandboxed)
            // The files' answers as they were.
            let sha = Crypto.SHA256.hash(data: image).map { String(format: "%02x", $0) }.joined()
            let file = try await fields(base + "/_mirror/" + path)
            #expect(file == ["200", "etag: \"\(sha)\"", "accept-ranges: bytes", "content-type: image/gif", "content-length: 6"] + sandboxed)
        }
    }

    @Test("a URL of the API's origin points here however it is written: no path, any case, a default port or not, in a list")
    func pointingByOrigin() {
        func pointing(_ text: String, from api: String) -> String {
            String(decoding: ReplayedPages.pointing(ArraySlice(text.utf8), from: api, to: "http://127.0.0.1:8080"), as: UTF8.self)
        }
        let api = "http://api.example.com"
        #expect(pointing(#"<http://api.example.com>; rel="first""#, from: api) == #"<http://127.0.0.1:8080>; rel="first""#)
        #expect(pointing(#"<HTTP://API.Example.COM/items?page=2>; rel="next""#, from: api)
            == #"<http://127.0.0.1:8080/items?page=2>; rel="next""#)
        #expect(pointing(#"<http://api.example.com:80/items?page=1>; rel="prev", <http://api.example.com>; rel="first", "#
            + #"<Http://api.example.com/items?page=3>; rel="last""#, from: api)
            == #"<http://127.0.0.1:8080/items?page=1>; rel="prev", <http://127.0.0.1:8080>; rel="first", "#
            + #"<http://127.0.0.1:8080/items?page=3>; rel="last""#)
        #expect(pointing(#"<https://api.example.com/a>; rel="next""#, from: "https://api.example.com:443")
            == #"<http://127.0.0.1:8080/a>; rel="next""#)
        #expect(pointing(#"{"next":"HTTP:\/\/api.example.com:80\/items?page=2","first":"http://api.example.com"}"#, from: api)
            == #"{"next":"http:\/\/127.0.0.1:8080\/items?page=2","first":"http://127.0.0.1:8080"}"#)
        // Another origin, or a host that only begins like the API's, stays as it is.
        let others = #"<http://api.example.com.evil.net/a>, <http://api.example.com:8080/a>, <https://api.example.com/a>, "#
            + #"<ftp://api.example.com/a>, <xhttp://api.example.com/a>, <http://api.example.com@evil.net/a>, <http://user@api.example.com/a>"#
        #expect(pointing(others, from: api) == others)
    }

    @Test("replayed Link headers name this server for every link of the API's origin, however the API wrote it")
    func linkHeadersByOrigin() async throws {
        let harness = try Harness()
        try await FixtureServer.with { request in
            let page = Int(request.parameter("page") ?? "") ?? 1
            let upper = request.base.replacingOccurrences(of: "http://", with: "HTTP://")
            let link = #"<\#(request.base)>; rel="first", <\#(upper)/items?page=\#(page + 1)>; rel="next", "#
                + #"<https://elsewhere.example/items?page=9>; rel="help""#
            return .json(page == 1 ? #"{"data":{"list":[{"id":"1"}]}}"# : #"{"data":{"list":[]}}"#, headers: [("Link", link)])
        } _: { server in
            _ = try await harness.run(itemsJob(), server: server)
        }
        try await serving(harness) { base in
            let link = try await get(base + "/items?page=1").headers["link"]
            #expect(link == #"<\#(base)>; rel="first", <\#(base)/items?page=2>; rel="next", <https://elsewhere.example/items?page=9>; rel="help""#)
        }
    }
}
