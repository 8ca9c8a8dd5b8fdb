import Foundation
@testable import MirrorModel
import MirrorTestSupport
import Testing

/// A Relay-style GraphQL job: a POST body with a `query`, cursor paging by `pageInfo`.
private let yaml = """
    version: 1
    jobs:
      - name: issues
        url: "BASE/graphql"
        method: POST
        body:
          query: "query($after: String) { issues(first: 2, after: $after) { nodes { id } pageInfo { endCursor hasNextPage } } }"
          variables: { after: "{cursor}" }
        next: data.issues.pageInfo.endCursor
        stop: { has_more: data.issues.pageInfo.hasNextPage }
        records: data.issues.nodes
        id: id
        table: t_issue
        retries: 0
    """

/// Answers the first page with records, the second with `second`.
private func serve(second: String) -> @Sendable (FixtureRequest) async -> FixtureResponse {
    { request in
        let body = String(decoding: request.body, as: UTF8.self)
        if !body.contains(#""after""#) {
            return .json(#"{"data":{"issues":{"nodes":[{"id":"1"},{"id":"2"}],"pageInfo":{"endCursor":"c2","hasNextPage":true}}}}"#)
        }
        return .json(second)
    }
}

@Suite("GraphQL", .timeLimit(.minutes(6)))
struct GraphQLTests {
    @Test("a job is GraphQL by a POST body with a query string, or a URL path ending in /graphql")
    func detection() throws {
        let harness = try Harness()
        let file = try harness.load("""
            version: 1
            defaults: { records: data.items, id: id }
            jobs:
              - { name: post, url: "https://api.example.com/v1", method: POST, body: { query: "{ items { id } }" }, table: t_a }
              - { name: get, url: "https://api.example.com/graphql?query=%7Bitems%7Bid%7D%7D", table: t_b }
              - { name: search, url: "https://api.example.com/search", method: POST, body: { query: { match: x } }, table: t_c }
              - { name: rest, url: "https://api.example.com/items?page={page}", table: t_d }
            """)
        #expect(file.jobs.map(\.isGraphQL) == [true, true, false, false])
    }

    @Test("errors and no data: the page fails, naming the first error's message")
    func errorsWithoutData() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with(serve(second: """
            {"errors":[{"message":"Field 'nodes' doesn't exist on type 'IssueConnection'","locations":[{"line":1,"column":40}]},
            {"message":"second"}],"data":null}
            """)) { server in
            try await harness.run(yaml, server: server)
        }
        #expect(summary.jobs[0].status == .failed)
        #expect(summary.jobs[0].error?.hasSuffix("/graphql: HTTP 200: GraphQL error: Field 'nodes' doesn't exist on type "
            + "'IssueConnection' (and 1 more); page 2 not stored, page 1 kept") == true)
        #expect(try harness.ids("t_issue") == ["1", "2"])
    }

    @Test("errors beside a null records field: the page fails too (an empty page would end the walk as if complete)")
    func errorsWithNullRecords() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with(serve(second: """
            {"errors":[{"message":"rate limited","path":["issues"]}],"data":{"issues":null}}
            """)) { server in
            try await harness.run(yaml, server: server)
        }
        #expect(summary.jobs[0].error?.hasSuffix(": HTTP 200: GraphQL error: rate limited; page 2 not stored, page 1 kept") == true)
    }

    @Test("errors beside data: the page is stored, and the run warns")
    func errorsBesideData() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with(serve(second: """
            {"errors":[{"message":"Field 'legacy' is deprecated"}],
             "data":{"issues":{"nodes":[{"id":"3"}],"pageInfo":{"endCursor":"c3","hasNextPage":false}}}}
            """)) { server in
            try await harness.run(yaml, server: server)
        }
        #expect(summary.jobs[0].status == .ok)
        #expect(summary.jobs[0].warnings
            == ["page 2: the response holds GraphQL errors beside its data, stored all the same: Field 'legacy' is deprecated"])
        #expect(try harness.ids("t_issue") == ["1", "2", "3"])
    }

    @Test("an API that is not GraphQL may have a records path beside an errors array of its own")
    func notGraphQL() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            request.parameter("page") == "1"
                ? .json(#"{"errors":[],"warnings":[{"message":"x"}],"data":{"list":[{"id":"1"}]}}"#)
                : .json(#"{"errors":[{"message":"nothing here"}],"data":{"list":[]}}"#)
        }) { server in
            try await harness.run(itemsJob(), server: server)
        }
        #expect(summary.jobs[0].status == .ok && summary.jobs[0].warnings == nil)
        #expect(try harness.ids() == ["1"])
    }
}
