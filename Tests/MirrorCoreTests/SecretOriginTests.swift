import Foundation
import GRDB
@testable import MirrorJobFile
@testable import MirrorModel
import MirrorTestSupport
import Testing

/// A key holding every character a query gives a meaning to.
private let awkwardKey = "a&b=c d/e+f%g#h?"

@Suite("secrets and origins", .timeLimit(.minutes(6)))
struct SecretOriginTests {
    @Test("a next link to another host is sent without the job's secret headers; the job's own host gets them")
    func nextLinkToAnotherHost() async throws {
        let harness = try Harness()
        let (own, other) = try await FixtureServer.with({ _ in .json(#"{"items":[{"id":"2"}]}"#) }) { other in
            try await FixtureServer.with({ request in
                .json(#"{"items":[{"id":"1"}],"next":"\#(other.base)/more?page=2"}"#,
                      headers: [("Link", "<\(other.base)/more?page=2>; rel=\"next\"")])
            }) { own in
                for next in ["next", "link"] {
                    let summary = try await harness.run("""
                        version: 1
                        jobs:
                          - name: \(next)
                            url: "BASE/first"
                            headers: { Authorization: "Bearer ${TOKEN}", X-Plain: "plain" }
                            next: \(next)
                            records: items
                            id: id
                            table: t_\(next)
                        """, server: own, environment: ["TOKEN": "t0k3n"])
                    #expect(summary.jobs.map(\.succeeded) == [true])
                }
                return (own.requests, other.requests)
            }
        }
        #expect(own.map { $0.headers["authorization"] } == ["Bearer t0k3n", "Bearer t0k3n"])
        #expect(other.map(\.target) == ["/more?page=2", "/more?page=2"])
        #expect(other.map { $0.headers["authorization"] } == [nil, nil])
        #expect(other.map { $0.headers["x-plain"] } == ["plain", "plain"])
    }

    @Test("a redirect to another host with the secret in its URL is not followed")
    func redirectCarryingTheSecret() async throws {
        let harness = try Harness()
        let (summary, other) = try await FixtureServer.with({ _ in .json(#"{"items":[]}"#) }) { other in
            let summary = try await FixtureServer.with({ request in
                FixtureResponse(status: 302, headers: [("Location", "\(other.base)/x?key=\(request.parameter("key") ?? "")")],
                                body: [])
            }) { own in
                try await harness.run("""
                    version: 1
                    jobs:
                      - { name: r, url: "BASE/first?key=${KEY}", records: items, id: id, table: t_r, retries: 0 }
                    """, server: own, environment: ["KEY": "s3cr3t"])
            }
            return (summary, other.requests)
        }
        #expect(other.isEmpty)
        #expect(summary.jobs[0].error?.hasSuffix(
            "/first?key=REDACTED: no response: HTTP 302 redirect to another host with a secret in its URL: not followed; "
                + "page 1 not stored, nothing stored") == true)
    }

    @Test("a secret in the query is percent-encoded: the API gets it whole, and it is stored and logged nowhere")
    func encodedInTheQuery() async throws {
        let harness = try Harness()
        let base = try await FixtureServer.with({ request in
            // The API echoes the key in its validator, as some do.
            let key = request.parameter("key") ?? ""
            if request.headers["if-none-match"] == "\"v-\(key)\"" { return FixtureResponse(status: 304, body: []) }
            return .json(#"{"items":[{"id":"\#(request.parameter("page") ?? "")"}]}"#, headers: [("ETag", "\"v-\(key)\"")])
        }) { server in
            let yaml = """
                version: 1
                jobs:
                  - name: q
                    url: "BASE/items?key=${KEY}&page={page}"
                    pages: { from: 1, to: 2 }
                    records: items
                    id: id
                    table: t_item
                """
            let first = try await harness.run(yaml, server: server, environment: ["KEY": awkwardKey])
            #expect(first.jobs.map(\.succeeded) == [true])
            #expect(server.requests.map { $0.parameter("key") } == [awkwardKey, awkwardKey])
            #expect(server.requests.map { $0.parameter("page") ?? "" }.sorted() == ["1", "2"])
            // The validator went back with the key in it, and the pages were not modified.
            let second = try await harness.run(yaml, server: server, environment: ["KEY": awkwardKey])
            #expect(second.jobs[0].pages.notModified == 2)
            return server.base
        }
        let stored = try await harness.database("t_item.sqlite").read { db in
            try Row.fetchAll(db, sql: "SELECT url, etag FROM _mirror_pages ORDER BY page").map {
                "\($0["url"] as String) \($0["etag"] as String)"
            }
        }
        #expect(stored == ["\(base)/items?key=REDACTED&page=1 \"v-${KEY}\"", "\(base)/items?key=REDACTED&page=2 \"v-${KEY}\""])
        // Neither the key nor any encoding of it is in any file of the output folder.
        let encoded = awkwardKey.addingPercentEncodingForQuery()
        for name in try FileManager.default.subpathsOfDirectory(atPath: harness.output) {
            let data = try Data(contentsOf: URL(fileURLWithPath: harness.output + "/" + name))
            #expect(data.range(of: Data(awkwardKey.utf8)) == nil && data.range(of: Data(encoded.utf8)) == nil, "\(name)")
        }
    }

    @Test("a value at the start of the URL (its scheme and host) is placed as it is; past the host it is encoded")
    func placement() throws {
        let harness = try Harness()
        let file = try harness.load("""
            version: 1
            jobs:
              - { name: a, url: "${BASE}/v1/${SEGMENT}?q=${Q}", records: r, id: id, table: t }
            """, environment: ["BASE": "https://api.example.com/x", "SEGMENT": "a/b", "Q": "1 2"])
        let url = file.jobs[0].url.url(page: 1, cursor: nil, redactor: file.jobs[0].redactor)
        #expect(url.real == "https://api.example.com/x/v1/a%2Fb?q=1%202")
        #expect(url.description == "REDACTED/v1/REDACTED?q=REDACTED")
    }

    @Test("variables listed in not_secret are shown as they are; every other one stays a secret")
    func notSecret() throws {
        let harness = try Harness()
        let file = try harness.load("""
            version: 1
            not_secret: [PORT, CITY]
            jobs:
              - { name: a, url: "http://127.0.0.1:${PORT}/e?city=${CITY}&key=${KEY}", records: r, id: id, table: t }
            """, environment: ["PORT": "8080", "CITY": "Z\u{fc}rich", "KEY": "k3y"])
        let job = try #require(file.jobs.first)
        let url = job.url.url(page: 1, cursor: nil, redactor: job.redactor)
        #expect(url.real == "http://127.0.0.1:8080/e?city=Z%C3%BCrich&key=k3y")
        #expect(url.description == "http://127.0.0.1:8080/e?city=Z%C3%BCrich&key=REDACTED")
        #expect(job.redactor.description == "Redactor(KEY)")
        do {
            _ = try harness.load("version: 1\nnot_secret: [\"a b\"]\njobs: [{ name: a, url: \"http://h/x\", records: r, id: id, table: t }]")
            Issue.record("a variable name with a space was accepted")
        } catch {
            #expect((error as? ConfigError)?.diagnostics.map(\.message) == ["'not_secret' must list environment variable names such as [PORT, CITY_ID]"])
        }
    }
}
