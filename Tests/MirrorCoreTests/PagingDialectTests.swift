import Foundation
@testable import MirrorJSON
@testable import MirrorModel
@testable import MirrorStore
import MirrorTestSupport
import Synchronization
import Testing

/// Lines a fixture handler writes down, in the order its requests came.
private final class Lines: Sendable {
    private let mutex = Mutex<[String]>([])
    func append(_ line: String) { mutex.withLock { $0.append(line) } }
    var lines: [String] { mutex.withLock { $0 } }
}

/// Serves `api`'s pages at `/items?page=N`, each with `extra(N)` added to its `data`.
private func serve(_ api: PagedAPI, extra: @escaping @Sendable (Int) -> String = { _ in "" })
    -> @Sendable (FixtureRequest) async -> FixtureResponse {
    { request in
        let page = Int(request.parameter("page") ?? "") ?? -1
        return .json(api.body(page: page, extra: extra(page)))
    }
}

@Suite("paging dialects", .timeLimit(.minutes(6)))
struct PagingDialectTests {
    @Test("has_more: the walk ends after a page whose flag is false; an empty page whose flag is true does not end it")
    func hasMore() async throws {
        let harness = try Harness()
        let api = PagedAPI(ids: [["1", "2"], [], ["3"], ["4"]])
        let summary = try await FixtureServer.with(serve(api) { page in #","has_more":\#(page < 3)"# }) { server in
            let summary = try await harness.run(itemsJob("stop: { has_more: data.has_more }\nconcurrency: 1"), server: server)
            #expect(server.requests.map(\.target) == ["/items?page=1", "/items?page=2", "/items?page=3"])
            return summary
        }
        #expect(try harness.ids() == ["1", "2", "3"])
        #expect(summary.jobs[0].stopReason == StopReason.noMore(page: 3).description)
        #expect(summary.jobs[0].pages.total == 3)
    }

    @Test("has_more: a page answered from its stored copy (304, refresh_after) keeps its flag: a rerun asks nothing past it")
    func hasMoreReplayed() async throws {
        let harness = try Harness()
        let api = PagedAPI(ids: [["1", "2"], ["3"]])
        let handler: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
            let page = Int(request.parameter("page") ?? "") ?? -1
            let etag = "\"p\(page)\""
            if request.headers["if-none-match"] == etag { return FixtureResponse(status: 304, headers: [("ETag", etag)], body: []) }
            return .json(api.body(page: page, extra: #","has_more":\#(page < 2)"#), headers: [("ETag", etag)])
        }
        let pages = "SELECT page, records, fetched_at IS NOT NULL FROM _mirror_pages ORDER BY page"
        try await FixtureServer.with(handler) { server in
            let job = itemsJob("stop: { has_more: data.has_more }\nconcurrency: 1")
            _ = try await harness.run(job, server: server)
            #expect(server.requests.map(\.target) == ["/items?page=1", "/items?page=2"])
            let stored = try harness.typedRows(pages)
            #expect(stored == [["integer:1", "integer:2", "integer:1"], ["integer:2", "integer:1", "integer:1"]])
            let again = try await harness.run(job, server: server)
            #expect(server.requests.dropFirst(2).map { "\($0.target) \($0.headers["if-none-match"] ?? "-")" }
                == [#"/items?page=1 "p1""#, #"/items?page=2 "p2""#])
            #expect(again.jobs[0].pages.notModified == 2)
            #expect(again.jobs[0].stopReason == StopReason.noMore(page: 2).description)
            #expect(try harness.typedRows(pages) == stored)
            let skipped = try await harness.run(itemsJob("stop: { has_more: data.has_more }\nconcurrency: 1\nrefresh_after: 1h"),
                                                server: server)
            #expect(server.requests.count == 4)
            #expect(skipped.jobs[0].pages.skipped == 2)
            #expect(skipped.jobs[0].stopReason == StopReason.noMore(page: 2).description)
            #expect(try harness.typedRows(pages) == stored)
        }
        #expect(try harness.ids() == ["1", "2", "3"])
    }

    @Test("Stripe, rerun: a page answered 304 ends the walk on its kept has_more, with no request past it")
    func stripeReplayed() async throws {
        let harness = try Harness()
        try await FixtureServer.with({ request in
            let after = request.parameter("starting_after") ?? ""
            let start = after.isEmpty ? 1 : Int(after.dropFirst(4))! + 1
            let etag = "\"c\(start)\""
            if request.headers["if-none-match"] == etag { return FixtureResponse(status: 304, headers: [("ETag", etag)], body: []) }
            let ids = (start ..< min(start + 2, 4)).map { #"{"id":"cus_\#($0)"}"# }
            return .json(#"{"object":"list","data":[\#(ids.joined(separator: ","))],"has_more":\#(start + 2 < 4)}"#,
                         headers: [("ETag", etag)])
        }) { server in
            let job = itemsJob("records: data\nnext: { cursor: data.-1.id }\nstop: { has_more: has_more }",
                               url: "BASE/v1/customers?limit=2&starting_after={cursor}")
                .replacingOccurrences(of: "    records: data.list\n", with: "")
            _ = try await harness.run(job, server: server)
            let again = try await harness.run(job, server: server)
            #expect(server.requests.map(\.target) == ["/v1/customers?limit=2", "/v1/customers?limit=2&starting_after=cus_2",
                                                      "/v1/customers?limit=2", "/v1/customers?limit=2&starting_after=cus_2"])
            #expect(again.jobs[0].pages.notModified == 2)
            #expect(again.jobs[0].stopReason == StopReason.noMore(page: 2).description)
        }
        #expect(try harness.ids() == ["cus_1", "cus_2", "cus_3"])
    }

    @Test("has_more missing from a page ends the walk after that page")
    func hasMoreMissing() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with(serve(PagedAPI(ids: [["1"], ["2"]]))) { server in
            let summary = try await harness.run(itemsJob("stop: { has_more: data.has_more }\nconcurrency: 1"), server: server)
            #expect(server.requests.map(\.target) == ["/items?page=1"])
            return summary
        }
        #expect(try harness.ids() == ["1"])
        #expect(summary.jobs[0].stopReason == "no more pages after page 1 (has_more)")
    }

    @Test("stop.short: a page of fewer records than the page size is the last one")
    func shortPage() async throws {
        let harness = try Harness()
        let api = PagedAPI(ids: [["1", "2", "3"], ["4", "5", "6"], ["7"], ["8"]])
        let summary = try await FixtureServer.with(serve(api)) { server in
            let summary = try await harness.run(itemsJob("stop: { short: 3 }\nconcurrency: 1"), server: server)
            #expect(server.requests.map(\.target) == ["/items?page=1", "/items?page=2", "/items?page=3"])
            return summary
        }
        #expect(try harness.ids() == ["1", "2", "3", "4", "5", "6", "7"])
        #expect(summary.jobs[0].stopReason == "short page 3")
    }

    @Test("stop.pages counts pages for walks from 0 and from 1; numbers may come as strings")
    func pageCount() async throws {
        for from in [0, 1] {
            let harness = try Harness()
            // Page values from..from+2 hold records; the API says "3" pages.
            let api = PagedAPI(ids: [["a"], ["b"], ["c"], ["d"]])
            let summary = try await FixtureServer.with({ request in
                let page = (Int(request.parameter("page") ?? "") ?? -9) - from + 1
                return .json(api.body(page: page, extra: #","pages":"3""#))
            }) { server in
                let summary = try await harness.run(itemsJob("pages: { from: \(from) }\nstop: { pages: data.pages }\nconcurrency: 1"),
                                                    server: server)
                #expect(server.requests.map(\.target) == (from ..< from + 3).map { "/items?page=\($0)" })
                return summary
            }
            #expect(try harness.ids() == ["a", "b", "c"])
            #expect(summary.jobs[0].stopReason == StopReason.lastPage(page: from + 2).description)
        }
    }

    @Test("last_page and total given as numeric strings end the walk as numbers do")
    func numericStrings() async throws {
        let harness = try Harness()
        let api = PagedAPI(ids: [["1", "2"], ["3"], ["4"]])
        let summary = try await FixtureServer.with(serve(api) { _ in #","last":"2""# }) { server in
            let summary = try await harness.run(itemsJob("stop: { last_page: data.last }\nconcurrency: 1"), server: server)
            #expect(server.requests.map(\.target) == ["/items?page=1", "/items?page=2"])
            return summary
        }
        #expect(try harness.ids() == ["1", "2", "3"])
        #expect(summary.jobs[0].stopReason == StopReason.lastPage(page: 2).description)

        let counted = try Harness()
        let total = try await FixtureServer.with(serve(api) { _ in #","total":"3""# }) { server in
            try await counted.run(itemsJob("stop: { total: data.total }\nconcurrency: 1"), server: server)
        }
        #expect(try counted.ids() == ["1", "2", "3"])
        #expect(total.jobs[0].stopReason == StopReason.total(3, page: 2).description)
    }

    @Test("a records array that is null is an empty page; a missing one still fails the job")
    func nullRecords() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            return .json(page == 1 ? #"{"data":{"list":[{"id":"1"}]}}"# : page == 2 ? #"{"data":{"list":null}}"# : #"{"data":{}}"#)
        }) { server in
            let summary = try await harness.run(itemsJob("concurrency: 1"), server: server)
            #expect(server.requests.map(\.target) == ["/items?page=1", "/items?page=2"])
            return summary
        }
        #expect(try harness.ids() == ["1"])
        #expect(summary.jobs[0].stopReason == StopReason.emptyPage(page: 2).description)

        let missing = try Harness()
        let failed = try await FixtureServer.with({ _ in .json(#"{"data":{}}"#) }) { server in
            try await missing.run(itemsJob("concurrency: 1"), server: server)
        }
        #expect(failed.jobs[0].error?.hasSuffix("HTTP 200: no 'data.list' in the response; page 1 not stored, nothing stored") == true)
    }

    @Test("records: '.' on a response that is an object stores that object as the one record")
    func objectRecord() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ _ in .json(#"{ "id": "settings", "theme": "dark" }"#) }) { server in
            let summary = try await harness.run("""
                version: 1
                jobs:
                  - name: settings
                    url: "BASE/settings"
                    records: .
                    id: id
                    table: t_item
                """, server: server)
            #expect(server.requests.map(\.target) == ["/settings"])
            return summary
        }
        #expect(try harness.ids() == ["settings"])
        #expect(try harness.record("settings") == #"{"id":"settings","theme":"dark"}"#)
        #expect(summary.jobs[0].stopReason == StopReason.singlePage.description)
    }

    @Test("stop keys are checked: known takes true, false, page, record or since; short a page size; last_page or pages, not both")
    func stopKeys() throws {
        let harness = try Harness()
        func itemsJob(_ keys: String) -> String { MirrorCoreTests.itemsJob(keys, url: "http://127.0.0.1:1/items?page={page}") }
        #expect(throws: (any Error).self) { try harness.load(itemsJob("stop: { known: newest }")) }
        do {
            _ = try harness.load(itemsJob("stop: { known: newest, short: 0, last_page: a, pages: b }"))
        } catch {
            let path = harness.folder + "/jobs.yaml"
            #expect("\(error)".components(separatedBy: "\n") == [
                "\(path):9:20: 'stop.known' must be true, false, page, record or since, not 'newest'",
                "\(path):9:35: 'stop.short' must be between 1 and 1000000, not 0",
                "\(path):9:38: 'stop.last_page' and 'stop.pages' both say where the walk ends: keep one",
            ])
        }
        let spec = try harness.load(itemsJob("stop: { known: record, short: 50, pages: meta.pages, has_more: more }")).jobs[0]
        #expect(spec.stop.known == .record && spec.stop.short == 50 && spec.stop.pages == JSONPath("meta.pages")
            && spec.stop.hasMore == JSONPath("more"))
        #expect(try harness.load(itemsJob("stop: { known: true }")).jobs[0].stop.known == .page)
        #expect(try harness.load(itemsJob("stop: { known: false }")).jobs[0].stop.known == nil)
    }

    /// A job `items` on `url`, records at `records`, with more `keys`, run against `handler`.
    private func walk(_ url: String, records: String = "items", keys: String,
                      _ handler: @escaping @Sendable (FixtureRequest) async -> FixtureResponse) async throws
        -> (targets: [String], ids: [String], summary: RunSummary) {
        let harness = try Harness()
        let yaml = """
            version: 1
            jobs:
              - name: items
                url: "\(url)"
                records: \(records)
                id: id
                table: t_item
                concurrency: 1
            \(keys.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
            """
        return try await FixtureServer.with(handler) { server in
            let summary = try await harness.run(yaml, server: server)
            return (server.requests.map(\.target), try harness.ids(), summary)
        }
    }

    @Test("a JSON Pointer names a key with dots and an @: OData's @odata.nextLink")
    func odata() async throws {
        let (targets, ids, summary) = try await walk("BASE/odata/People", records: "value", keys: #"next: "/@odata.nextLink""#) { request in
            let skip = Int(request.parameter("$skip") ?? "0") ?? 0
            let next = skip < 4 ? #","@odata.nextLink":"http://\#(request.authority)/odata/People?$skip=\#(skip + 2)""# : ""
            return .json(#"{"@odata.context":"x","value":[{"id":\#(skip)},{"id":\#(skip + 1)}]\#(next)}"#)
        }
        #expect(targets == ["/odata/People", "/odata/People?$skip=2", "/odata/People?$skip=4"])
        #expect(ids == ["0", "1", "2", "3", "4", "5"])
        #expect(summary.jobs[0].stopReason == StopReason.noNextPage(page: 3).description)
    }

    @Test("a link chosen by its relation: links[rel=next].href, wherever next stands among the links (HATEOAS)")
    func linkByRelation() async throws {
        let (targets, ids, summary) = try await walk("BASE/items?page=1", keys: "next: links[rel=next].href") { request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            let base = "http://\(request.authority)/items?page="
            let links: String
            switch page {
            case 1: links = #"[{"rel":"self","href":"\#(base)1"},{"rel":"next","href":"\#(base)2"}]"#
            case 2: links = #"[{"rel":"next","href":"\#(base)3"},{"rel":"self","href":"\#(base)2"},{"rel":"prev","href":"\#(base)1"}]"#
            case 3: links = #"[{"rel":"prev","href":"\#(base)2"},{"rel":"self","href":"\#(base)3"},{"rel":"next","href":"\#(base)4"}]"#
            default: links = #"[{"rel":"self","href":"\#(base)4"},{"rel":"prev","href":"\#(base)3"}]"#
            }
            return .json(#"{"items":[{"id":\#(page)}],"links":\#(links)}"#)
        }
        #expect(targets == ["/items?page=1", "/items?page=2", "/items?page=3", "/items?page=4"])
        #expect(ids == ["1", "2", "3", "4"])
        #expect(summary.jobs[0].stopReason == StopReason.noNextPage(page: 4).description)
    }

    @Test("relative next URLs in the body are resolved against the request URL")
    func relativeNext() async throws {
        let (targets, ids, _) = try await walk("BASE/api/v1/items?page=1", keys: "next: links.next") { request in
            switch request.target {
            case "/api/v1/items?page=1": return .json(#"{"items":[{"id":1}],"links":{"next":"/api/v1/items?page=2"}}"#)
            case "/api/v1/items?page=2": return .json(#"{"items":[{"id":2}],"links":{"next":"?page=3"}}"#)
            case "/api/v1/items?page=3": return .json(#"{"items":[{"id":3}],"links":{"next":"../v2/items?p=4"}}"#)
            case "/api/v2/items?p=4": return .json(#"{"items":[{"id":4}],"links":{"next":"./more?p=5"}}"#)
            default: return .json(#"{"items":[{"id":5}],"links":{}}"#)
            }
        }
        #expect(targets == ["/api/v1/items?page=1", "/api/v1/items?page=2", "/api/v1/items?page=3", "/api/v2/items?p=4",
                            "/api/v2/more?p=5"])
        #expect(ids == ["1", "2", "3", "4", "5"])
    }

    @Test("next.cursor sends back a value that looks like a URL as a parameter; next.url takes one that does not look like one")
    func explicitNext() async throws {
        let (targets, ids, _) = try await walk("BASE/items?after={cursor}", keys: "next: { cursor: meta.after }") { request in
            let after = request.parameter("after") ?? ""
            return .json(after.isEmpty ? #"{"items":[{"id":1}],"meta":{"after":"https://x.example/2"}}"#
                                       : #"{"items":[{"id":2}],"meta":{}}"#)
        }
        #expect(targets == ["/items", "/items?after=https%3A%2F%2Fx.example%2F2"])
        #expect(ids == ["1", "2"])

        let (urls, _, _) = try await walk("BASE/items", keys: "next: { url: meta.next }") { request in
            .json(request.target == "/items" ? #"{"items":[{"id":1}],"meta":{"next":"items-2"}}"# : #"{"items":[{"id":2}]}"#)
        }
        #expect(urls == ["/items", "/items-2"])
    }

    @Test("next.header reads the next cursor or URL from a response header")
    func headerNext() async throws {
        let (targets, ids, _) = try await walk("BASE/items?page={cursor}", keys: "next: { header: X-Next-Page }") { request in
            let page = Int(request.parameter("page") ?? "") ?? 1
            return .json(#"{"items":[{"id":\#(page)}]}"#, headers: page < 3 ? [("X-Next-Page", "\(page + 1)")] : [])
        }
        #expect(targets == ["/items", "/items?page=2", "/items?page=3"])
        #expect(ids == ["1", "2", "3"])
    }

    @Test("Stripe: the last record's id is the next cursor, has_more ends the walk with no request past it")
    func stripe() async throws {
        let (targets, ids, summary) = try await walk("BASE/v1/customers?limit=2&starting_after={cursor}", records: "data",
                                                     keys: "next: { cursor: data.-1.id }\nstop: { has_more: has_more }") { request in
            let after = request.parameter("starting_after") ?? ""
            let start = after.isEmpty ? 1 : Int(after.dropFirst(4))! + 1
            let ids = (start ..< min(start + 2, 6)).map { #"{"id":"cus_\#($0)"}"# }
            return .json(#"{"object":"list","data":[\#(ids.joined(separator: ","))],"has_more":\#(start + 2 < 6)}"#)
        }
        #expect(targets == ["/v1/customers?limit=2", "/v1/customers?limit=2&starting_after=cus_2",
                            "/v1/customers?limit=2&starting_after=cus_4"])
        #expect(ids == ["cus_1", "cus_2", "cus_3", "cus_4", "cus_5"])
        #expect(summary.jobs[0].stopReason == StopReason.noMore(page: 3).description)
    }

    @Test("next takes one of url, cursor or header; a header name has no colon or space")
    func nextKeys() throws {
        let harness = try Harness()
        let url = "http://127.0.0.1:1/items?c={cursor}"
        do {
            _ = try harness.load(itemsJob("next: { url: a, cursor: b }", url: url))
            Issue.record("loaded")
        } catch {
            #expect("\(error)" == "\(harness.folder)/jobs.yaml:5:10: 'url' of job 'items' uses {cursor} but 'next' gives no cursor\n"
                + "\(harness.folder)/jobs.yaml:9:11: 'next' takes one of url, cursor, header or scroll")
        }
        #expect(throws: (any Error).self) { try harness.load(itemsJob("next: { header: 'X Next' }", url: url)) }
        #expect(throws: (any Error).self) { try harness.load(itemsJob("next: { url: links.next }", url: url)) }
        do {
            _ = try harness.load(itemsJob("method: POST\nbody: { after: \"{cursor}\" }\nheaders: { X-C: \"{cursor}\" }",
                                          url: "http://127.0.0.1:1/items"))
            Issue.record("loaded")
        } catch {
            #expect("\(error)" == "\(harness.folder)/jobs.yaml:10:11: 'body' of job 'items' uses {cursor} but 'next' gives no cursor\n"
                + "\(harness.folder)/jobs.yaml:11:14: header 'X-C' of job 'items' uses {cursor} but 'next' gives no cursor")
        }
        #expect(try harness.load(itemsJob("next: { header: X-Next }", url: url)).jobs[0].next == .header("X-Next"))
        for (keys, message) in [
            (#"next: { cursor: a, request: "http://127.0.0.1:1/s?c={cursor}" }"#, "9:24: 'next.request' goes with 'next.scroll' only"),
            (#"next: { scroll: a, request: "http://127.0.0.1:1/s" }"#, "9:33: 'next.request' must hold {cursor}, where the scroll cursor goes"),
        ] {
            do {
                _ = try harness.load(itemsJob(keys, url: "http://127.0.0.1:1/items"))
                Issue.record("loaded: \(keys)")
            } catch {
                #expect("\(error)" == "\(harness.folder)/jobs.yaml:\(message)")
            }
        }
        let scroll = try harness.load(itemsJob(#"next: { scroll: _scroll_id, request: "http://127.0.0.1:1/s?id={cursor}" }"#, url: url))
        #expect(scroll.jobs[0].requestURL(page: 2, cursor: "x y").description == "http://127.0.0.1:1/s?id=x%20y")
        #expect(scroll.jobs[0].requestURL(page: 1, cursor: nil).description == "http://127.0.0.1:1/items")
        #expect(try harness.load(itemsJob("next: { cursor: /meta/after }", url: url)).jobs[0].next == .cursor(JSONPath("/meta/after")!))
    }

    @Test("Notion: a POST body leaves out an empty cursor on the first request; has_more ends the walk")
    func notion() async throws {
        let bodies = Lines()
        let (targets, ids, _) = try await walk("BASE/v1/databases/d/query", records: "results", keys: """
            method: POST
            body: { start_cursor: "{cursor}", page_size: 2 }
            next: next_cursor
            stop: { has_more: has_more }
            """) { request in
            let body = String(decoding: request.body, as: UTF8.self)
            bodies.append(body)
            return .json(body.contains("c2") ? #"{"results":[{"id":"3"}],"next_cursor":null,"has_more":false}"#
                                             : #"{"results":[{"id":"1"},{"id":"2"}],"next_cursor":"c2","has_more":true}"#)
        }
        #expect(targets == ["/v1/databases/d/query", "/v1/databases/d/query"])
        #expect(bodies.lines == [#"{"page_size":2}"#, #"{"start_cursor":"c2","page_size":2}"#])
        #expect(ids == ["1", "2", "3"])
    }

    @Test("a cursor that was a number goes back in a JSON body as a number; in a form body, form-encoded")
    func bodyCursors() async throws {
        let bodies = Lines()
        let (_, ids, _) = try await walk("BASE/search", keys: """
            method: POST
            body: { after: "{cursor}", q: "x" }
            next: meta.next
            """) { request in
            let body = String(decoding: request.body, as: UTF8.self)
            bodies.append(body)
            return .json(body.contains("20") ? #"{"items":[{"id":2}],"meta":{}}"# : #"{"items":[{"id":1}],"meta":{"next":20}}"#)
        }
        #expect(bodies.lines == [#"{"q":"x"}"#, #"{"after":20,"q":"x"}"#])
        #expect(ids == ["1", "2"])

        let forms = Lines()
        let (_, formIDs, _) = try await walk("BASE/search", keys: """
            method: POST
            headers: { Content-Type: application/x-www-form-urlencoded }
            body: { q: "a b&c=d", after: "{cursor}", n: 5 }
            next: meta.next
            """) { request in
            let body = String(decoding: request.body, as: UTF8.self)
            forms.append(body + " " + (request.headers["content-type"] ?? ""))
            return .json(body.contains("after") ? #"{"items":[{"id":2}],"meta":{}}"# : #"{"items":[{"id":1}],"meta":{"next":"x/y z"}}"#)
        }
        #expect(forms.lines == ["q=a+b%26c%3Dd&n=5 application/x-www-form-urlencoded",
                                "q=a+b%26c%3Dd&after=x%2Fy+z&n=5 application/x-www-form-urlencoded"])
        #expect(formIDs == ["1", "2"])
    }

    @Test("a number cursor stays a number after a resume and after a 304 replay of the page that gave it")
    func numberCursorKept() async throws {
        let harness = try Harness()
        let bodies = Lines()
        let failing = Mutex(true)
        let yaml = itemsJob("""
            method: POST
            body: { after: "{cursor}", q: "x" }
            next: meta.next
            records: items
            retries: 0
            """, url: "BASE/search").replacingOccurrences(of: "    records: data.list\n", with: "")
        try await FixtureServer.with({ request in
            let body = String(decoding: request.body, as: UTF8.self)
            bodies.append(body)
            if body.contains("20") {
                if failing.withLock({ $0 }) { return .text("down", status: 500) }
                return .json(#"{"items":[{"id":2}],"meta":{}}"#)
            }
            if request.headers["if-none-match"] == "\"p1\"" { return FixtureResponse(status: 304, headers: [("ETag", "\"p1\"")], body: []) }
            return .json(#"{"items":[{"id":1}],"meta":{"next":20}}"#, headers: [("ETag", "\"p1\"")])
        }) { server in
            let first = try await harness.run(yaml, server: server)
            #expect(first.jobs[0].status == .failed)
            failing.withLock { $0 = false }
            let resumed = try await harness.run(yaml, server: server)
            #expect(resumed.jobs[0].resumedAt != nil)
            let replayed = try await harness.run(yaml, server: server)
            #expect(replayed.jobs[0].pages.notModified == 1)
        }
        #expect(bodies.lines == [#"{"q":"x"}"#, #"{"after":20,"q":"x"}"#, #"{"after":20,"q":"x"}"#,
                                 #"{"q":"x"}"#, #"{"after":20,"q":"x"}"#])
    }

    @Test("{cursor} and {page} in header values")
    func headerCursor() async throws {
        let seen = Lines()
        let (_, ids, _) = try await walk("BASE/items", keys: """
            headers: { X-Cursor: "{cursor}", X-Page: "p{page}" }
            next: meta.next
            """) { request in
            seen.append("\(request.headers["x-cursor"] ?? "-") \(request.headers["x-page"] ?? "-")")
            return .json(request.headers["x-cursor"] == "k2" ? #"{"items":[{"id":2}],"meta":{}}"#
                                                             : #"{"items":[{"id":1}],"meta":{"next":"k2"}}"#)
        }
        #expect(seen.lines == [" p1", "k2 p2"])
        #expect(ids == ["1", "2"])
    }

    @Test("a form body must be a flat mapping")
    func formBody() throws {
        let harness = try Harness()
        do {
            _ = try harness.load(itemsJob("""
                method: POST
                headers: { Content-Type: application/x-www-form-urlencoded }
                body: { a: { b: 1 } }
                """, url: "http://127.0.0.1:1/items"))
            Issue.record("loaded")
        } catch {
            #expect("\(error)" == "\(harness.folder)/jobs.yaml:11:11: a form body (Content-Type: application/x-www-form-urlencoded) must be a mapping of names to values")
        }
    }

    @Test("a scroll cursor, the same on every page, walks until an empty page; a page repeating the one before is a loop")
    func scroll() async throws {
        let calls = Lines()
        let (targets, ids, summary) = try await walk("BASE/contacts/scroll?scroll_param={cursor}", records: "data",
                                                     keys: "next: { scroll: scroll_param }") { request in
            calls.append(request.target)
            let pages = [#"[{"id":1},{"id":2}]"#, #"[{"id":3},{"id":4}]"#, #"[{"id":5}]"#, "[]"]
            return .json(#"{"data":\#(pages[min(calls.lines.count - 1, 3)]),"scroll_param":"s1"}"#)
        }
        #expect(targets == ["/contacts/scroll"] + Array(repeating: "/contacts/scroll?scroll_param=s1", count: 3))
        #expect(ids == ["1", "2", "3", "4", "5"])
        #expect(summary.jobs[0].stopReason == StopReason.emptyPage(page: 4).description)

        let (repeated, kept, loop) = try await walk("BASE/contacts/scroll?scroll_param={cursor}", records: "data",
                                                    keys: "next: { scroll: scroll_param }") { _ in
            .json(#"{"data":[{"id":1},{"id":2}],"scroll_param":"s1"}"#)
        }
        #expect(repeated.count == 2)
        #expect(kept == ["1", "2"])
        #expect(loop.jobs[0].error?.contains("loop: page 2 repeats the page before it") == true)
    }

    @Test("no silent truncation: a next path missing from the first page, a stop path and a downloads path found nowhere are warned of")
    func missingPaths() async throws {
        let (targets, ids, summary) = try await walk("BASE/odata/People", records: "value", keys: """
            next: "@odata.nextLink"
            stop: { total: "@odata.count" }
            downloads: [photo.url]
            """) { _ in
            .json(#"{"@odata.context":"x","value":[{"id":1},{"id":2}],"@odata.nextLink":"http://127.0.0.1:1/2"}"#)
        }
        #expect(targets == ["/odata/People"])
        #expect(ids == ["1", "2"])
        #expect(summary.jobs[0].succeeded)
        #expect(summary.jobs[0].warnings == [
            "page 1: '@odata.nextLink' is not in the response (its keys: '@odata.context', 'value', '@odata.nextLink')",
            "'@odata.count' (stop) was in no response of the walk",
            "'photo.url' (downloads) was in no record of the walk",
        ])
        // A next value that is there and null is the last page, and no warning.
        let (_, _, quiet) = try await walk("BASE/items", keys: "next: meta.next\nstop: { has_more: meta.more }") { _ in
            .json(#"{"items":[{"id":1}],"meta":{"next":null,"more":false}}"#)
        }
        #expect(quiet.jobs[0].warnings == nil)
        // A last page that leaves its next link out (HAL, OData) is no mistake; a key like the one named is.
        let (_, _, last) = try await walk("BASE/orders", keys: "next: _links.next.href") { _ in
            .json(#"{"items":[{"id":1}],"_links":{"self":{"href":"/orders"}}}"#)
        }
        #expect(last.jobs[0].warnings == nil)
        let (_, _, typo) = try await walk("BASE/items", keys: "next: nextCursor") { _ in
            .json(#"{"items":[{"id":1}],"next_cursor":"abc"}"#)
        }
        #expect(typo.jobs[0].warnings == ["page 1: 'nextCursor' is not in the response (its keys: 'items', 'next_cursor')"])
    }

    @Test("pages told apart by a header alone are walked as pages, and never replayed from each other's stored copy")
    func headerPages() async throws {
        let harness = try Harness()
        let yaml = """
            version: 1
            jobs:
              - name: items
                url: "BASE/items"
                headers: { X-Page: "{page}" }
                refresh_after: 1h
                concurrency: 1
                records: data.list
                id: id
                table: t_item
            """
        let api = PagedAPI(ids: [["1", "2"], ["3"]])
        let handler: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
            .json(api.body(page: Int(request.headers["x-page"] ?? "") ?? 0), headers: [("ETag", #""same""#)])
        }
        let (first, second) = try await FixtureServer.with(handler) { server in
            let first = try await harness.run(yaml, server: server)
            let second = try await harness.run(yaml, server: server)
            #expect(server.requests.map { $0.headers["x-page"] ?? "-" } == ["1", "2", "3", "1", "2", "3"])
            #expect(server.requests.allSatisfy { $0.headers["if-none-match"] == nil })
            return (first, second)
        }
        #expect(first.jobs[0].stopReason == StopReason.emptyPage(page: 3).description)
        #expect(second.jobs[0].records == JobOutcome.Records(new: 0, updated: 0, unchanged: 3, rejected: 0, pruned: 0))
        #expect(try harness.ids() == ["1", "2", "3"])
    }

    @Test("a secret the server echoes in an error body is masked before the body is cut, so no part of it shows")
    func errorSecret() async throws {
        let harness = try Harness()
        let secret = "s3cr3t-value-123"
        let summary = try await FixtureServer.with({ _ in
            .text(String(repeating: "a", count: 190) + " bad key \(secret) and more", status: 401)
        }) { server in
            try await harness.run(itemsJob("concurrency: 1", url: "BASE/items?key=${KEY}"), server: server,
                                  environment: ["KEY": secret])
        }
        let error = try #require(summary.jobs[0].error)
        #expect(error.contains("HTTP 401: unexpected status (unauthorized): aaaa"))
        #expect(error.contains(" bad key R…;"))
        #expect(!error.contains("s3cr"))
    }
}
