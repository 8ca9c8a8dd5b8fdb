import Foundation
@testable import MirrorCore
import Testing

/// `mirror init`: what one answer of an API says of the job that walks it.
@Suite("init detection", .timeLimit(.minutes(6)))
struct InitDetectionTests {
    private func detect(_ body: String, url: String = "https://api.example.com/v1/items", headers: [String: String] = [:],
                        name: String = "items") throws -> [JobProposal] {
        try JobProposal.detect(url: url, status: 200, headers: headers, body: Array(body.utf8), name: name)
    }

    private func failure(_ body: String, url: String = "https://api.example.com/v1/items") -> String? {
        do {
            _ = try detect(body, url: url)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test("a next URL in the body, DRF's `next`, with its `count`")
    func nextURL() throws {
        let proposals = try detect(#"{"count":3,"next":"https://api.example.com/v1/items?page=2","previous":null,"#
            + #""results":[{"id":1},{"id":2}]}"#)
        #expect(proposals.count == 1)
        let proposal = proposals[0]
        #expect(proposal.paging == .nextURL(path: "next"))
        #expect(proposal.records == .init(path: "results", why: "the array of objects, 2 of them"))
        #expect(proposal.id == .init(path: "id", why: "named like an id, present and unique in all 2 records"))
        #expect(proposal.url == "https://api.example.com/v1/items")
        #expect(proposal.notes == [])
    }

    @Test("next URLs in HAL, OData, JSON:API and Datasette answers; a cursor named `next` is not one")
    func nextURLPaths() throws {
        #expect(try detect(#"{"_embedded":{"orders":[{"id":"a"}]},"_links":{"next":{"href":"/orders?page=2"}}}"#)[0].paging
            == .nextURL(path: "_links.next.href"))
        #expect(try detect(#"{"value":[{"id":"a"}],"@odata.nextLink":"https://h/x?$skip=1"}"#)[0].paging
            == .nextURL(path: "/@odata.nextLink"))
        #expect(try detect(#"{"data":[{"id":"a"}],"links":{"next":"https://h/x?page%5Bnumber%5D=2"}}"#)[0].paging
            == .nextURL(path: "links.next"))
        #expect(try detect(#"{"rows":[{"id":1}],"next":"1","next_url":"http://h/db/items.json?_next=1"}"#)[0].paging
            == .nextURL(path: "next_url"))
    }

    @Test("a Link header with rel=next over a top-level array")
    func link() throws {
        let proposal = try detect(#"[{"id":1},{"id":2}]"#, url: "https://api.example.com/orders?per_page=2",
                                  headers: ["link": #"<https://api.example.com/orders?per_page=2&page=2>; rel="next""#])[0]
        #expect(proposal.paging == .link)
        #expect(proposal.records.path == ".")
        #expect(proposal.url == "https://api.example.com/orders?per_page=2")
    }

    @Test("a cursor plus has_more: each likely query parameter in turn")
    func cursor() throws {
        let proposals = try detect(#"{"results":[{"uuid":"u1"},{"uuid":"u2"}],"next_cursor":"abc","has_more":true}"#)
        #expect(proposals.map(\.paging) == [
            .cursor(path: "next_cursor", parameter: "cursor", hasMore: "has_more"),
            .cursor(path: "next_cursor", parameter: "next_cursor", hasMore: "has_more"),
            .cursor(path: "next_cursor", parameter: "after", hasMore: "has_more"),
        ])
        #expect(proposals.map(\.url) == ["https://api.example.com/v1/items?cursor={cursor}",
                                         "https://api.example.com/v1/items?next_cursor={cursor}",
                                         "https://api.example.com/v1/items?after={cursor}"])
        #expect(proposals[0].id.path == "uuid")
    }

    @Test("has_more with no cursor: the last record's id, as Stripe pages")
    func keyset() throws {
        let proposal = try detect(#"{"object":"list","data":[{"id":"cus_1"},{"id":"cus_2"}],"has_more":true}"#,
                                  url: "https://api.example.com/v1/customers?limit=2")[0]
        #expect(proposal.paging == .cursor(path: "data.-1.id", parameter: "starting_after", hasMore: "has_more"))
        #expect(proposal.url == "https://api.example.com/v1/customers?limit=2&starting_after={cursor}")
    }

    @Test("Relay's pageInfo beside `nodes`: the nodes are the records, endCursor goes back as `after`")
    func relayNodes() throws {
        let proposals = try detect(#"{"data":{"issues":{"edges":[{"cursor":"YTox","node":{"id":"SXNzdWU6MQ=="}},"#
            + #"{"cursor":"YToy","node":{"id":"SXNzdWU6Mg=="}}],"nodes":[{"id":"SXNzdWU6MQ=="},{"id":"SXNzdWU6Mg=="}],"#
            + #""pageInfo":{"hasNextPage":true,"endCursor":"YToy"}}}}"#, url: "https://api.example.com/issues?first=2", name: "issues")
        #expect(proposals.count == 1)
        let proposal = proposals[0]
        #expect(proposal.records == .init(path: "data.issues.nodes", why: "the Relay connection's `nodes`, 2 of them"))
        #expect(proposal.id == .init(path: "id", why: "named like an id, present and unique in all 2 records"))
        #expect(proposal.paging == .cursor(path: "data.issues.pageInfo.endCursor", parameter: "after",
                                           hasMore: "data.issues.pageInfo.hasNextPage"))
        #expect(proposal.pagingWhy == "the answer's `data.issues.pageInfo` is Relay's: `endCursor` goes back as `after`, "
            + "`hasNextPage` says whether more follow")
        #expect(proposal.url == "https://api.example.com/issues?first=2&after={cursor}")
        #expect(proposal.notes == [])
        #expect(proposal.firstPageCount == 2)
    }

    @Test("Relay's pageInfo beside `edges` alone: the edges are the records, the id inside each `node`")
    func relayEdges() throws {
        let proposal = try detect(#"{"data":{"repository":{"name":"r","issues":{"edges":[{"cursor":"YTox","node":{"number":1,"id":"I1"}},"#
            + #"{"cursor":"YToy","node":{"number":2,"id":"I2"}}],"pageInfo":{"endCursor":"YToy","hasNextPage":true}}}}}"#,
            url: "https://api.example.com/issues", name: "issues")[0]
        #expect(proposal.records == .init(path: "data.repository.issues.edges", why: "the Relay connection's `edges`, 2 of them, "
            + "each stored whole as `{cursor, node}`: a records path names one array and cannot reach the nodes inside the edges"))
        #expect(proposal.id == .init(path: "node.id", why: "named like an id, present and unique in all 2 records (inside each edge's `node`)"))
        #expect(proposal.paging == .cursor(path: "data.repository.issues.pageInfo.endCursor", parameter: "after",
                                           hasMore: "data.repository.issues.pageInfo.hasNextPage"))
    }

    @Test("Relay's pageInfo on a single page, hasNextPage false and endCursor null, still pages by it")
    func relaySinglePage() throws {
        let proposal = try detect(#"{"data":{"users":{"nodes":[{"id":"U1"}],"pageInfo":{"hasNextPage":false,"endCursor":null}}}}"#,
                                  url: "https://api.example.com/users", name: "users")[0]
        #expect(proposal.paging == .cursor(path: "data.users.pageInfo.endCursor", parameter: "after",
                                           hasMore: "data.users.pageInfo.hasNextPage"))
        #expect(proposal.url == "https://api.example.com/users?after={cursor}")
        #expect(proposal.yaml() == """
            # written by `mirror init` from the API's answers; check it with `mirror check`, then `mirror run` it
            version: 1
            jobs:
              - name: users
                # the first request leaves the `{cursor}` parameter out
                url: "https://api.example.com/users?after={cursor}"
                # the answer's `data.users.pageInfo` is Relay's: `endCursor` goes back as `after`, `hasNextPage` says whether more follow
                next: { cursor: data.users.pageInfo.endCursor }
                stop: { has_more: data.users.pageInfo.hasNextPage }
                # the Relay connection's `nodes`, 1 of them
                records: data.users.nodes
                # named like an id, present and unique in all 1 records
                id: id
                table: users

            """)
    }

    @Test("a REST answer with Relay's pageInfo at its top, beside a `next` of its own")
    func relayREST() throws {
        let proposal = try detect(#"{"nodes":[{"id":1},{"id":2}],"next":"ignored","pageInfo":{"endCursor":"Mg","hasNextPage":true}}"#,
                                  url: "https://api.example.com/v1/items?per_page=2")[0]
        #expect(proposal.records.path == "nodes")
        #expect(proposal.paging == .cursor(path: "pageInfo.endCursor", parameter: "after", hasMore: "pageInfo.hasNextPage"))
        #expect(proposal.url == "https://api.example.com/v1/items?per_page=2&after={cursor}")
    }

    @Test("a GraphQL query's answer: a POST whose body holds the query and the cursor in its `after:` variable")
    func graphQL() throws {
        let query = try GraphQLQuery("query Items($cursor: String) { items(first: 2, after: $cursor) { nodes { id name } pageInfo { hasNextPage endCursor } } }")
        #expect(query.cursorVariable == "cursor")
        let proposals = try JobProposal.detect(url: "https://api.example.com/graphql", status: 200, headers: [:],
                                               body: Array(#"{"data":{"items":{"nodes":[{"id":"SXRlbTox","name":"n1"},{"id":"SXRlbToy","name":"n2"}],"pageInfo":{"hasNextPage":true,"endCursor":"Mg=="}}}}"#.utf8),
                                               name: "items", graphQL: query)
        #expect(proposals.count == 1)
        #expect(proposals[0].yaml() == """
            # written by `mirror init` from the API's answers; check it with `mirror check`, then `mirror run` it
            version: 1
            jobs:
              - name: items
                # the first request leaves the body's `cursor` out
                url: "https://api.example.com/graphql"
                method: POST
                body: { query: "query Items($cursor: String) { items(first: 2, after: $cursor) { nodes { id name } pageInfo { hasNextPage endCursor } } }", variables: { cursor: "{cursor}" } }
                # the answer's `data.items.pageInfo` is Relay's: `endCursor` goes back as the query's `$cursor`, `hasNextPage` says whether more follow
                next: { cursor: data.items.pageInfo.endCursor }
                stop: { has_more: data.items.pageInfo.hasNextPage }
                # the Relay connection's `nodes`, 2 of them
                records: data.items.nodes
                # named like an id, present and unique in all 2 records
                id: id
                table: items

            """)
    }

    @Test("a GraphQL query with no `after:` variable, and an answer of errors without data, write no job")
    func graphQLFailures() throws {
        func message(_ body: () throws -> Void) -> String? {
            do { try body(); return nil } catch { return "\(error)" }
        }
        #expect(message { _ = try GraphQLQuery("{ items(first: 10) { nodes { id } pageInfo { hasNextPage endCursor } } }") }
            == "the GraphQL query passes no variable as `after:`: declare one and pass it to the connection, as in "
            + "`query($after: String) { issues(first: 50, after: $after) { nodes { id } pageInfo { hasNextPage endCursor } } }`, "
            + "so that each page's cursor goes in the variables; no job written")
        let query = try GraphQLQuery("query($after: String) { items(after: $after) { nodez { id } } }")
        #expect(message {
            _ = try JobProposal.detect(url: "https://api.example.com/graphql", status: 200, headers: [:],
                                       body: Array(#"{"data":null,"errors":[{"message":"Cannot query field 'nodez' on type 'ItemConnection'.","locations":[{"line":1,"column":42}]},{"message":"second"}]}"#.utf8),
                                       name: "items", graphQL: query)
        } == "POST https://api.example.com/graphql: HTTP 200: GraphQL error: Cannot query field 'nodez' on type 'ItemConnection'. "
            + "(and 1 more); no job written")
        #expect(message {
            _ = try JobProposal.detect(url: "https://api.example.com/graphql", status: 200, headers: [:],
                                       body: Array(#"{"data":{"items":[{"id":1}]}}"#.utf8), name: "items", graphQL: query)
        } == "POST https://api.example.com/graphql: HTTP 200: no Relay connection in the answer (`pageInfo { hasNextPage endCursor }` "
            + "beside `nodes` or `edges` of objects); no job written: ask for them in the query")
    }

    @Test("page numbers in the URL, with a total of pages, a last page, a total or a page size")
    func pageNumbers() throws {
        let url = "https://api.example.com/v1/items?page=1&per_page=2"
        let pages = try detect(#"{"items":[{"id":1},{"id":2}],"meta":{"total_pages":3}}"#, url: url)[0]
        #expect(pages.paging == .numbers(parameter: "page", from: 1, step: 1, stop: .pages("meta.total_pages")))
        #expect(pages.url == "https://api.example.com/v1/items?page={page}&per_page=2")
        #expect(try detect(#"{"items":[{"id":1}],"last_page":4}"#, url: url)[0].paging
            == .numbers(parameter: "page", from: 1, step: 1, stop: .lastPage("last_page")))
        #expect(try detect(#"{"items":[{"id":1}],"total":9}"#, url: url)[0].paging
            == .numbers(parameter: "page", from: 1, step: 1, stop: .total("total")))
        #expect(try detect(#"{"items":[{"id":1},{"id":2}]}"#, url: url)[0].paging
            == .numbers(parameter: "page", from: 1, step: 1, stop: .short(2)))
        #expect(try detect(#"{"items":[{"id":1},{"id":2}]}"#, url: "https://h/items?page=0")[0].paging
            == .numbers(parameter: "page", from: 0, step: 1, stop: .empty))
    }

    @Test("page and offset numbers echoed in the body are added to the URL")
    func echoed() throws {
        let page = try detect(#"{"page":1,"per_page":2,"data":[{"id":1},{"id":2}]}"#)[0]
        #expect(page.paging == .numbers(parameter: "page", from: 1, step: 1, stop: .short(2)))
        #expect(page.url == "https://api.example.com/v1/items?page={page}")
        let offset = try detect(#"{"offset":0,"limit":2,"total":5,"data":[{"id":1},{"id":2}]}"#)[0]
        #expect(offset.paging == .numbers(parameter: "offset", from: 0, step: 2, stop: .total("total")))
        #expect(offset.url == "https://api.example.com/v1/items?offset={page}&limit=2")
        let query = try detect(#"{"data":[{"id":1},{"id":2}]}"#, url: "https://h/items?limit=2&offset=0")[0]
        #expect(query.paging == .numbers(parameter: "offset", from: 0, step: 2, stop: .short(2)))
        #expect(query.url == "https://h/items?limit=2&offset={page}")
    }

    @Test("flask-smorest's X-Pagination header: page numbers, the first full page's size ends the walk")
    func paginationHeader() throws {
        let header = #"{"total": 5, "total_pages": 3, "first_page": 1, "last_page": 3, "page": 1, "next_page": 2}"#
        let proposal = try detect(#"[{"id":1},{"id":2}]"#, headers: ["x-pagination": header])[0]
        #expect(proposal.paging == .numbers(parameter: "page", from: 1, step: 1, stop: .short(2)))
        #expect(proposal.url == "https://api.example.com/v1/items?page={page}")
        #expect(proposal.pagingWhy == "the answer's X-Pagination header names page 1 and a next page 2: page numbers; "
            + "a page of fewer than 2 records is the last (the header's `total_pages` is 3, and a walk reads no stop from a header)")
        let query = try detect(#"[{"id":1},{"id":2}]"#, url: "https://h/items?page=2&page_size=2",
                               headers: ["x-pagination": #"{"total": 5, "page": 2, "next_page": 3}"#])[0]
        #expect(query.paging == .numbers(parameter: "page", from: 2, step: 1, stop: .short(2)))
        #expect(query.url == "https://h/items?page={page}&page_size=2")
        #expect(try detect(#"[{"id":1},{"id":2}]"#, headers: ["x-pagination": #"{"total": 2, "page": 1}"#])[0].paging == .single)
    }

    @Test("two arrays of objects: the larger is chosen, and both are named")
    func twoArrays() throws {
        let proposal = try detect(#"{"included":[{"id":"p1"},{"id":"p2"}],"data":[{"id":"1"},{"id":"2"},{"id":"3"}]}"#)[0]
        #expect(proposal.records == .init(path: "data", why: "the largest of two arrays of objects"))
        #expect(proposal.notes == ["two arrays of objects: `data` (3) and `included` (2); chose `data`",
                                   "no paging seen: the job makes one request"])
        // Ties go to the shallower array, then to the first name.
        let tie = try detect(#"{"b":[{"id":1}],"a":[{"id":2}],"meta":{"x":[{"id":3}]}}"#)[0]
        #expect(tie.notes[0] == "three arrays of objects: `a` (1), `b` (1) and `meta.x` (1); chose `a`")
    }

    @Test("the id: named like one, unique, scalar; 64-bit-unsafe integers kept exact")
    func id() throws {
        let big = try detect(#"{"data":[{"id":12345678901234567890123,"name":"a"},{"id":12345678901234567890124,"name":"b"}]}"#)[0]
        #expect(big.id == .init(path: "id", why: "named like an id, present and unique in all 2 records; "
            + "numbers past 64 bits are kept exactly as written"))
        #expect(try detect(#"{"data":[{"code":"x","item_id":7},{"code":"y","item_id":8}]}"#)[0].id.path == "item_id")
        #expect(try detect(#"{"data":[{"id":1,"slug":"a"},{"id":1,"slug":"b"}]}"#)[0].id.path == "slug")
        #expect(try detect(#"{"data":[{"customerId":"c1"},{"customerId":"c2"}]}"#)[0].id.path == "customerId")
    }

    @Test("what cannot be decided: no array of objects, no unique id, not JSON")
    func undecidable() {
        #expect(failure(#"{"status":"ok","data":{"name":"x"}}"#) == "GET https://api.example.com/v1/items: HTTP 200: "
            + "no array of objects in the answer (its members: `status`, `data`); no job written: "
            + "name the records with `records:` in a job written by hand")
        #expect(failure(#"[1,2,3]"#) == "GET https://api.example.com/v1/items: HTTP 200: the answer is an array of other values "
            + "than objects: no records to walk; no job written")
        #expect(failure(#"{"data":[{"id":1,"name":"a"},{"id":1,"name":"b"}]}"#) == "GET https://api.example.com/v1/items: "
            + "HTTP 200: no id in the 2 records of `data`: `id` '1' repeats (records 1 and 2); no job written")
        #expect(failure(#"{"data":[{"name":"a"},{"name":"b"}]}"#) == "GET https://api.example.com/v1/items: HTTP 200: "
            + "no id in the 2 records of `data`: no member is named like an id (id, uuid, item_id, key, slug, …Id); no job written")
        #expect(failure("<html>") == "GET https://api.example.com/v1/items: HTTP 200: the answer is not JSON; no job written")
    }

    @Test("the job file: a comment above each detected key, quoted where YAML needs it")
    func yaml() throws {
        var proposal = try detect(#"{"value":[{"id":"a"}],"@odata.nextLink":"https://h/x?$skip=1"}"#,
                                  url: "https://api.example.com/v1.0/users?$top=1", name: "users")[0]
        proposal.confirmation = "page 2 confirmed: 1 new ids"
        #expect(proposal.yaml(auth: "\n  type: bearer\n  token: \"${TOKEN}\"\n") == """
            # written by `mirror init` from the API's answers; check it with `mirror check`, then `mirror run` it
            version: 1
            jobs:
              - name: users
                url: "https://api.example.com/v1.0/users?$top=1"
                # the answer's `/@odata.nextLink` holds the next page's URL (page 2 confirmed: 1 new ids)
                next: { url: "/@odata.nextLink" }
                # the array of objects, 1 of them
                records: value
                # named like an id, present and unique in all 1 records
                id: id
                table: users
                auth:
                  type: bearer
                  token: "${TOKEN}"

            """)
    }

    @Test("a name from the URL's last path segment")
    func name() {
        #expect(JobProposal.name(fromURL: "https://h/api/items/") == "items")
        #expect(JobProposal.name(fromURL: "https://h/db/items.json?_shape=objects") == "items")
        #expect(JobProposal.name(fromURL: "https://api.example.com/") == "api")
        #expect(JobProposal.tableName("2024-events") == "t_2024_events")
    }
}
