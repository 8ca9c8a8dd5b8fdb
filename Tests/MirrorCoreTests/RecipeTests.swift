import Foundation
@testable import MirrorJSON
@testable import MirrorModel
import MirrorTestSupport
import Synchronization
import Testing

/// The jobs of docs/paging.md, the paging recipes, by job name: each `yaml` block under a
/// `##` heading of the page.
private let recipes: [String: String] = {
    let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/paging.md")
    guard let text = try? String(contentsOf: page, encoding: .utf8),
          let start = text.range(of: "\n## ") else { return [:] }
    let body = text[start.lowerBound...]
    var found: [String: String] = [:]
    for block in body.components(separatedBy: "```yaml\n").dropFirst() {
        guard let end = block.range(of: "```") else { continue }
        let yaml = String(block[..<end.lowerBound])
        if let nameLine = yaml.split(separator: "\n").first, nameLine.hasPrefix("- name: ") {
            found[String(nameLine.dropFirst("- name: ".count))] = yaml
        }
    }
    return found
}()

/// Bodies and headers a fixture saw, in the order its requests came.
private final class Seen: Sendable {
    private let mutex = Mutex<[String]>([])
    func append(_ line: String) { mutex.withLock { $0.append(line) } }
    var lines: [String] { mutex.withLock { $0 } }
}

@Suite("paging recipes", .timeLimit(.minutes(6)))
struct RecipeTests {
    /// Runs the recipe `name` (one request at a time) against `handler`.
    func run(_ name: String, harness: Harness? = nil,
             _ handler: @escaping @Sendable (FixtureRequest, String) async -> FixtureResponse) async throws
        -> (targets: [String], ids: [String], summary: RunSummary) {
        let recipe = try #require(recipes[name], "no recipe '\(name)' in docs/paging.md")
        let harness = try harness ?? Harness()
        var job = recipe.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n")
        if !recipe.contains("concurrency:") { job += "\n    concurrency: 1" }
        let yaml = "version: 1\njobs:\n" + job.replacingOccurrences(of: "https://api.example.com", with: "BASE") + "\n"
        return try await FixtureServer.with({ request in
            await handler(request, "http://" + request.authority)
        }) { server in
            let summary = try await harness.run(yaml, server: server, environment: [
                "GITHUB_TOKEN": "gh-t0k", "STRIPE_KEY": "sk_test", "NOTION_TOKEN": "secret_n",
            ])
            let table = recipe.split(separator: "\n").first { $0.contains("table: ") }.map { String($0.split(separator: " ").last!) }
            return (server.requests.map(\.target), try harness.ids(table ?? ""), summary)
        }
    }

    @Test("docs/paging.md holds exactly the recipes tested here")
    func complete() {
        #expect(recipes.keys.sorted() == ["activity", "datasette_rows", "drf_cursor", "drf_offset", "drf_pages", "es_logs", "feed", "github_issues",
                                          "graph_users", "graphql_issues", "hal_orders", "intercom_contacts", "jsonapi_articles",
                                          "notion_pages", "stripe_customers"])
    }

    @Test("Django REST Framework: page numbers")
    func drfPages() async throws {
        let (targets, ids, _) = try await run("drf_pages") { request, base in
            switch request.parameter("page") {
            case nil: .json(#"{"count":5,"next":"\#(base)/api/items/?page=2","previous":null,"results":[{"id":1},{"id":2}]}"#)
            case "2": .json(#"{"count":5,"next":"\#(base)/api/items/?page=3","results":[{"id":3},{"id":4}]}"#)
            default: .json(#"{"count":5,"next":null,"results":[{"id":5}]}"#)
            }
        }
        #expect(targets == ["/api/items/", "/api/items/?page=2", "/api/items/?page=3"])
        #expect(ids == ["1", "2", "3", "4", "5"])
    }

    @Test("Django REST Framework: limit and offset")
    func drfOffset() async throws {
        let (targets, ids, summary) = try await run("drf_offset") { request, _ in
            request.parameter("offset") == "0" ? .json(#"{"count":3,"results":[{"id":0},{"id":1}]}"#)
                                               : .json(#"{"count":3,"results":[{"id":2}]}"#)
        }
        #expect(targets == ["/api/items/?limit=100&offset=0", "/api/items/?limit=100&offset=100"])
        #expect(ids == ["0", "1", "2"])
        #expect(summary.jobs[0].stopReason == StopReason.total(3, page: 100).description)
    }

    @Test("Django REST Framework: cursor")
    func drfCursor() async throws {
        let (targets, ids, _) = try await run("drf_cursor") { request, base in
            request.parameter("cursor") == nil
                ? .json(#"{"next":"\#(base)/api/events/?cursor=cD0yMDI0","previous":null,"results":[{"id":"a"}]}"#)
                : .json(#"{"next":null,"results":[{"id":"b"}]}"#)
        }
        #expect(targets == ["/api/events/", "/api/events/?cursor=cD0yMDI0"])
        #expect(ids == ["a", "b"])
    }

    @Test("GitHub: Link headers")
    func github() async throws {
        let auth = Seen()
        let (targets, ids, _) = try await run("github_issues") { request, base in
            auth.append(request.headers["authorization"] ?? "")
            return request.parameter("page") == nil
                ? .json(#"[{"id":1},{"id":2}]"#, headers: [("Link", #"<\#(base)/repos/o/r/issues?per_page=100&state=all&page=2>; rel="next", <\#(base)/repos/o/r/issues?per_page=100&state=all&page=2>; rel="last""#)])
                : .json(#"[{"id":3}]"#)
        }
        #expect(targets == ["/repos/o/r/issues?per_page=100&state=all", "/repos/o/r/issues?per_page=100&state=all&page=2"])
        #expect(ids == ["1", "2", "3"])
        #expect(auth.lines == ["Bearer gh-t0k", "Bearer gh-t0k"])
    }

    @Test("Stripe: keyset cursors and has_more")
    func stripe() async throws {
        let (targets, ids, summary) = try await run("stripe_customers") { request, _ in
            switch request.parameter("starting_after") {
            case nil: .json(#"{"object":"list","data":[{"id":"cus_1"},{"id":"cus_2"}],"has_more":true}"#)
            case "cus_2": .json(#"{"object":"list","data":[{"id":"cus_3"}],"has_more":false}"#)
            default: .json(#"{"error":{"message":"unexpected"}}"#, status: 400)
            }
        }
        #expect(targets == ["/v1/customers?limit=100", "/v1/customers?limit=100&starting_after=cus_2"])
        #expect(ids == ["cus_1", "cus_2", "cus_3"])
        #expect(summary.jobs[0].stopReason == StopReason.noMore(page: 2).description)
    }

    @Test("Notion: POST with a cursor in the body")
    func notion() async throws {
        let bodies = Seen()
        let (targets, ids, _) = try await run("notion_pages") { request, _ in
            let body = String(decoding: request.body, as: UTF8.self)
            bodies.append(body + " " + (request.headers["notion-version"] ?? ""))
            return body.contains("start_cursor")
                ? .json(#"{"object":"list","results":[{"id":"p3"}],"next_cursor":null,"has_more":false}"#)
                : .json(#"{"object":"list","results":[{"id":"p1"},{"id":"p2"}],"next_cursor":"c-2","has_more":true}"#)
        }
        #expect(targets == ["/v1/databases/d1/query", "/v1/databases/d1/query"])
        #expect(bodies.lines == [#"{"page_size":100} 2022-06-28"#, #"{"start_cursor":"c-2","page_size":100} 2022-06-28"#])
        #expect(ids == ["p1", "p2", "p3"])
    }

    @Test("Relay GraphQL: pageInfo")
    func graphql() async throws {
        let variables = Seen()
        let (targets, ids, _) = try await run("graphql_issues") { request, _ in
            let body = try? JSONDocument(parsing: request.body)
            variables.append(body?.root["variables"]?.rawText ?? "-")
            return body?.root["variables"]?["after"] == nil
                ? .json(#"{"data":{"issues":{"nodes":[{"id":"I1"},{"id":"I2"}],"pageInfo":{"endCursor":"Y3Vy","hasNextPage":true}}}}"#)
                : .json(#"{"data":{"issues":{"nodes":[{"id":"I3"}],"pageInfo":{"endCursor":"Y3Vz","hasNextPage":false}}}}"#)
        }
        #expect(targets == ["/graphql", "/graphql"])
        #expect(variables.lines == ["{}", #"{"after":"Y3Vy"}"#])
        #expect(ids == ["I1", "I2", "I3"])
    }

    @Test("OData and Microsoft Graph: @odata.nextLink")
    func odata() async throws {
        let (targets, ids, _) = try await run("graph_users") { request, base in
            request.parameter("$skiptoken") == nil
                ? .json(#"{"@odata.context":"x","value":[{"id":"u1"}],"@odata.nextLink":"\#(base)/v1.0/users?$top=100&$skiptoken=X2"}"#)
                : .json(#"{"@odata.context":"x","value":[{"id":"u2"}]}"#)
        }
        #expect(targets == ["/v1.0/users?$top=100", "/v1.0/users?$top=100&$skiptoken=X2"])
        #expect(ids == ["u1", "u2"])
    }

    @Test("Intercom: scroll")
    func intercom() async throws {
        let calls = Seen()
        let (targets, ids, _) = try await run("intercom_contacts") { request, _ in
            calls.append(request.target)
            let pages = [#"[{"id":"c1"},{"id":"c2"}]"#, #"[{"id":"c3"}]"#, "[]"]
            return .json(#"{"type":"list","data":\#(pages[min(calls.lines.count - 1, 2)]),"scroll_param":"s-9"}"#)
        }
        #expect(targets == ["/contacts/scroll", "/contacts/scroll?scroll_param=s-9", "/contacts/scroll?scroll_param=s-9"])
        #expect(ids == ["c1", "c2", "c3"])
    }

    @Test("Elasticsearch: scroll")
    func elasticsearch() async throws {
        let calls = Seen()
        let (targets, ids, summary) = try await run("es_logs") { request, _ in
            calls.append(request.target)
            switch (request.path, calls.lines.count) {
            case ("/logs/_search", _): return .json(#"{"_scroll_id":"DXF1+/=","hits":{"total":{"value":3},"hits":[{"_id":"a"},{"_id":"b"}]}}"#)
            case ("/_search/scroll", 2): return .json(#"{"_scroll_id":"DXF1+/=","hits":{"hits":[{"_id":"c"}]}}"#)
            default: return .json(#"{"_scroll_id":"DXF1+/=","hits":{"hits":[]}}"#)
            }
        }
        #expect(targets == ["/logs/_search?scroll=1m&size=1000&sort=_doc", "/_search/scroll?scroll=1m&scroll_id=DXF1%2B%2F%3D",
                            "/_search/scroll?scroll=1m&scroll_id=DXF1%2B%2F%3D"])
        #expect(ids == ["a", "b", "c"])
        #expect(summary.jobs[0].stopReason == StopReason.emptyPage(page: 3).description)
    }

    @Test("Datasette: next_url")
    func datasette() async throws {
        let (targets, ids, _) = try await run("datasette_rows") { request, base in
            request.parameter("_next") == nil
                ? .json(#"{"rows":[{"id":1},{"id":2}],"next":"2","next_url":"\#(base)/db/items.json?_shape=objects&_size=100&_next=2"}"#)
                : .json(#"{"rows":[{"id":3}],"next":null,"next_url":null}"#)
        }
        #expect(targets == ["/db/items.json?_shape=objects&_size=100", "/db/items.json?_shape=objects&_size=100&_next=2"])
        #expect(ids == ["1", "2", "3"])
    }

    @Test("HAL: _links.next.href")
    func hal() async throws {
        let (targets, ids, _) = try await run("hal_orders") { request, _ in
            request.parameter("page") == "1"
                ? .json(#"{"_links":{"self":{"href":"/orders?page=1"},"next":{"href":"/orders?page=2"}},"_embedded":{"orders":[{"id":1}]}}"#)
                : .json(#"{"_links":{"self":{"href":"/orders?page=2"}},"_embedded":{"orders":[{"id":2}]}}"#)
        }
        #expect(targets == ["/orders?page=1", "/orders?page=2"])
        #expect(ids == ["1", "2"])
    }

    @Test("JSON:API: links.next")
    func jsonAPI() async throws {
        let (targets, ids, _) = try await run("jsonapi_articles") { request, base in
            request.target.contains("after")
                ? .json(#"{"data":[{"type":"articles","id":"2"}],"links":{"next":null}}"#)
                : .json(#"{"data":[{"type":"articles","id":"1"}],"links":{"next":"\#(base)/articles?page%5Bsize%5D=50&page%5Bafter%5D=1"}}"#)
        }
        #expect(targets == ["/articles?page%5Bsize%5D=50", "/articles?page%5Bsize%5D=50&page%5Bafter%5D=1"])
        #expect(ids == ["1", "2"])
    }

    @Test("a newest-first feed: stop at the first known record")
    func feed() async throws {
        let harness = try Harness()
        let first = PagedAPI(ids: [["5", "4"], ["3", "2"], ["1"]])
        let second = PagedAPI(ids: [["7", "6"], ["5", "4"], ["3", "2"], ["1"]])
        @Sendable func body(_ api: PagedAPI, _ request: FixtureRequest) -> FixtureResponse {
            let page = Int(request.parameter("page") ?? "") ?? 0
            let items = page >= 1 && page <= api.pages.count ? api.pages[page - 1] : []
            return .json(#"{"items":[\#(items.joined(separator: ","))]}"#)
        }
        let (all, _, _) = try await run("feed", harness: harness) { request, _ in body(first, request) }
        #expect(all == ["/feed?page=1", "/feed?page=2", "/feed?page=3", "/feed?page=4"])
        let (newer, ids, summary) = try await run("feed", harness: harness) { request, _ in body(second, request) }
        #expect(newer == ["/feed?page=1", "/feed?page=2"])
        #expect(Set(ids) == ["1", "2", "3", "4", "5", "6", "7"])
        #expect(summary.jobs[0].stopReason == StopReason.knownRecord(page: 2).description)
    }

    @Test("a newest-first feed whose edited records move to the top: stop at what the last run had")
    func activity() async throws {
        let harness = try Harness()
        // Newest updated_at first; the API ignores `updated_since`.
        @Sendable func body(_ records: [(id: Int, updated: Int)], _ request: FixtureRequest) -> FixtureResponse {
            let page = Int(request.parameter("page") ?? "") ?? 0
            let items = records.sorted { $0.updated > $1.updated }.dropFirst((page - 1) * 2).prefix(2)
            return .json(#"{"items":[\#(items.map { #"{"id":\#($0.id),"updated_at":"2024-05-0\#($0.updated)T00:00:00Z"}"# }.joined(separator: ","))]}"#)
        }
        let first = [(1, 1), (2, 2), (3, 3), (4, 4)]
        let (all, _, _) = try await run("activity", harness: harness) { request, _ in body(first, request) }
        #expect(all == ["/activity?page=1", "/activity?page=2", "/activity?page=3"])
        // Record 1 edited (now newest), record 5 new: 1, 5 | 4, 3 | 2.
        let second = [(1, 6), (2, 2), (3, 3), (4, 4), (5, 5)]
        let (newer, ids, summary) = try await run("activity", harness: harness) { request, _ in body(second, request) }
        #expect(newer == ["/activity?page=1&updated_since=2024-05-04T00%3A00%3A00Z",
                          "/activity?page=2&updated_since=2024-05-04T00%3A00%3A00Z"])
        #expect(Set(ids) == ["1", "2", "3", "4", "5"])
        #expect(try harness.record("1", table: "t_activity") == #"{"id":1,"updated_at":"2024-05-06T00:00:00Z"}"#)
        #expect(summary.jobs[0].stopReason == "page 2 reached {since}")
    }
}
