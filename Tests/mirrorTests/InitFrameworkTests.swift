import Foundation
@testable import MirrorHTTP
@testable import MirrorModel
import MirrorTestSupport
import Testing

/// `mirror init` on the paginations of real web frameworks (`scripts/auth-servers/frameworks_server.py`):
/// the job it writes, unedited, walks every record of the table the server pages through.
@Suite("mirror init on web frameworks", .enabled(if: AuthServer.python != nil, "MIRROR_TEST_PYTHON is not set (scripts/test.sh sets it)"),
       .timeLimit(.minutes(6)))
struct InitFrameworkTests {
    @Test("the written job walks ids 1 to 53, as the framework's table holds them", arguments: [
        ("/drf/page/", "page", "next: { url: next }", "integer"), ("/drf/limit/", "limit", "next: { url: next }", "integer"),
        ("/drf/cursor/", "cursor", "next: { url: next }", "integer"), ("/fastapi/items", "items", "stop: { pages: pages }", "integer"),
        ("/fastapi/limit", "limit", "stop: { total: total }", "integer"), ("/smorest/items", "items", "stop: { short: 10 }", "integer"),
        // JSON:API (djangorestframework-jsonapi): ids are strings, the records `data`, the next page `links.next`
        ("/drf/jsonapi/", "jsonapi", "next: { url: links.next }", "text"),
        ("/drf/jsonapi/limit/", "limit", "next: { url: links.next }", "text"),
    ])
    func walk(path: String, table: String, paging: String, idType: String) async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await AuthServer.withShared("frameworks_server.py") { server in
            let initialized = try await mirror(["init", server.base + path, "--out", "job.yaml"], in: folder)
            #expect(initialized.status == 0, "\(initialized.stderr)")
            #expect(initialized.stdout == "wrote job.yaml (job '\(table)', table '\(table)')\nnext: mirror run job.yaml\n")
            let file = try String(contentsOfFile: folder + "/job.yaml", encoding: .utf8)
            #expect(file.split(separator: "\n").contains { $0.trimmingCharacters(in: .whitespaces) == paging }, "\(file)")
            let check = try await mirror(["check", "job.yaml"], in: folder)
            #expect(check.status == 0, "\(check.stderr)")
            let run = try await mirror(["run", "job.yaml", "--output", "out", "--quiet"], in: folder)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try await sqlite(folder + "/out/\(table).sqlite", "SELECT id, json_type(record, '$.id') FROM \"\(table)\" ORDER BY position")
                == (1...53).map { "\($0)|\(idType)\n" }.joined())
        }
    }

    @Test("the jobs a framework's own description gives walk ids 1 to 53", arguments: [
        ("/openapi.json", ["fastapi_items", "fastapi_limit"], [
            "url: \"{base}/fastapi/items?page={page}&size=50\"", "stop: { pages: pages }", "records: items",
            "url: \"{base}/fastapi/limit?offset={page}&limit=50\"", "stop: { total: total }", "records: items",
        ]),
        ("/smorest/openapi.json", ["smorest_items"], ["url: \"{base}/smorest/items?page={page}&page_size=10\"", "stop: { short: 10 }",
                                                     "records: \".\""]),
    ])
    func openAPI(path: String, tables: [String], keys: [String]) async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await AuthServer.withShared("frameworks_server.py") { server in
            let description = try await HTTPClient().send(HTTPRequest(
                method: "GET", url: RedactedURL(real: server.base + path, redactor: .none),
                headers: [], body: nil, timeout: answerTimeout, maxBytes: 16 << 20))
            #expect(description.status == 200)
            try Data(description.body).write(to: URL(fileURLWithPath: folder + "/openapi.json"))
            let initialized = try await mirror(["init", "--openapi", "openapi.json", "--base-url", server.base, "--out", "job.yaml"],
                                               in: folder)
            #expect(initialized.status == 0, "\(initialized.stderr)")
            #expect(initialized.stdout == "wrote job.yaml (\(tables.count) job\(tables.count == 1 ? "" : "s"): \(tables.joined(separator: ", ")))\n"
                + "next: mirror check job.yaml, then mirror run job.yaml\n")
            let file = try String(contentsOfFile: folder + "/job.yaml", encoding: .utf8)
            let lines = file.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(lines.filter { $0.hasPrefix("url:") || $0.hasPrefix("stop:") || $0.hasPrefix("records:") }
                == keys.map { $0.replacingOccurrences(of: "{base}", with: server.base) }, "\(file)")
            let check = try await mirror(["check", "job.yaml"], in: folder)
            #expect(check.status == 0, "\(check.stderr)")
            let run = try await mirror(["run", "job.yaml", "--output", "out", "--quiet"], in: folder)
            #expect(run.status == 0, "\(run.stderr)")
            for table in tables {
                #expect(try await sqlite(folder + "/out/\(table).sqlite", "SELECT id FROM \"\(table)\" ORDER BY position")
                    == (1...53).map { "\($0)\n" }.joined())
            }
        }
    }
}

extension InitFrameworkTests {
    @Test("the jobs drf-spectacular's description of Django REST framework gives walk ids 1 to 53", arguments: [
        ("/drf/schema/?format=json", "openapi.json"), ("/drf/schema/", "openapi.yaml"),
    ])
    func drfSpectacular(path: String, file: String) async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await AuthServer.withShared("frameworks_server.py") { server in
            let description = try await HTTPClient().send(HTTPRequest(
                method: "GET", url: RedactedURL(real: server.base + path, redactor: .none),
                headers: [], body: nil, timeout: answerTimeout, maxBytes: 16 << 20))
            #expect(description.status == 200)
            try Data(description.body).write(to: URL(fileURLWithPath: folder + "/" + file))
            let initialized = try await mirror(["init", "--openapi", file, "--base-url", server.base, "--out", "job.yaml"], in: folder)
            #expect(initialized.status == 0, "\(initialized.stderr)")
            #expect(initialized.stdout == "wrote job.yaml (3 jobs: drf_cursor, drf_limit, drf_page)\n"
                + "next: mirror check job.yaml, then mirror run job.yaml\n")
            let text = try String(contentsOfFile: folder + "/job.yaml", encoding: .utf8)
            let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            let keys = ["- name:", "url:", "next:", "stop:", "records:", "id:", "table:", "# GET"]
            // The schema view describes itself too: an object, not a list, so a comment.
            let written: [String] = lines.filter { line in keys.contains { line.hasPrefix($0) } }
            let perView: [String] = ["cursor", "limit", "page"].flatMap { (name: String) -> [String] in [
                "- name: drf_\(name)", "url: \"\(server.base)/drf/\(name)/\"", "next: { url: next }", "records: results", "id: id",
                "table: drf_\(name)",
            ] }
            #expect(written == perView + ["# GET /drf/schema/: the 200 response has no array of objects"], "\(text)")
            let check = try await mirror(["check", "job.yaml"], in: folder)
            #expect(check.status == 0, "\(check.stderr)")
            let run = try await mirror(["run", "job.yaml", "--output", "out", "--quiet"], in: folder)
            #expect(run.status == 0, "\(run.stderr)")
            let ids = (1...53).map { "\($0)\n" }.joined()
            for table in ["drf_cursor", "drf_limit", "drf_page"] {
                let stored = try await sqlite(folder + "/out/\(table).sqlite", "SELECT id FROM \"\(table)\" ORDER BY position")
                #expect(stored == ids)
            }
        }
    }
}

extension InitFrameworkTests {
    static let graphQLQuery = "query Items($after: String) { items(first: 10, after: $after) { edges { cursor node { id number name } } "
        + "pageInfo { hasNextPage endCursor } } }"

    @Test("mirror init --graphql on Strawberry's Relay connection writes a POST job that walks its 53 nodes", arguments: [false, true])
    func graphQL(fromFile: Bool) async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Data(Self.graphQLQuery.utf8).write(to: URL(fileURLWithPath: folder + "/items.graphql"))
        try await AuthServer.withShared("frameworks_server.py") { server in
            let initialized = try await mirror(["init", server.base + "/graphql", "--graphql", fromFile ? "@items.graphql" : Self.graphQLQuery,
                                                "--name", "items", "--out", "job.yaml"], in: folder)
            #expect(initialized.status == 0, "\(initialized.stderr)")
            #expect(initialized.stdout == "wrote job.yaml (job 'items', table 'items')\nnext: mirror run job.yaml\n")
            let file = try String(contentsOfFile: folder + "/job.yaml", encoding: .utf8)
            let lines = file.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.hasPrefix("#") }
            #expect(lines == [
                "version: 1", "jobs:", "- name: items", "url: \"\(server.base)/graphql\"", "method: POST",
                "body: { query: \"\(Self.graphQLQuery)\", variables: { after: \"{cursor}\" } }",
                "next: { cursor: data.items.pageInfo.endCursor }", "stop: { has_more: data.items.pageInfo.hasNextPage }",
                "records: data.items.edges", "id: node.id", "table: items",
            ], "\(file)")
            #expect(file.contains("# the answer's `data.items.pageInfo` is Relay's: `endCursor` goes back as the query's `$after`, "
                + "`hasNextPage` says whether more follow (page 2 confirmed: 10 new ids)\n"), "\(file)")
            let check = try await mirror(["check", "job.yaml"], in: folder)
            #expect(check.status == 0, "\(check.stderr)")
            let run = try await mirror(["run", "job.yaml", "--output", "out", "--quiet"], in: folder)
            #expect(run.status == 0, "\(run.stderr)")
            // Strawberry's global ids, the base64 of `Item:N`; each edge stored whole, its node's number N.
            #expect(try await sqlite(folder + "/out/items.sqlite", "SELECT id, json_extract(record, '$.node.number') FROM items ORDER BY position")
                == (1...53).map { "\(Data("Item:\($0)".utf8).base64EncodedString())|\($0)\n" }.joined())
        }
    }

    @Test("mirror init --graphql writes nothing for an answer of GraphQL errors without data, or a query with no `after:` variable")
    func graphQLRefused() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await AuthServer.withShared("frameworks_server.py") { server in
            let wrong = try await mirror(["init", server.base + "/graphql", "--graphql",
                                          "query($after: String) { items(first: 10, after: $after) { nodez { id } } }", "--out", "job.yaml"],
                                         in: folder)
            #expect(wrong.status == 2)
            #expect(wrong.stderr == "error: POST \(server.base)/graphql: HTTP 200: GraphQL error: "
                + "Cannot query field 'nodez' on type 'ItemConnection'.; no job written\n")
            let unpaged = try await mirror(["init", server.base + "/graphql", "--graphql",
                                            "{ items(first: 10) { edges { node { id } } pageInfo { hasNextPage endCursor } } }",
                                            "--out", "job.yaml"], in: folder)
            #expect(unpaged.status == 2)
            #expect(unpaged.stderr == "error: the GraphQL query passes no variable as `after:`: declare one and pass it to the connection, "
                + "as in `query($after: String) { issues(first: 50, after: $after) { nodes { id } pageInfo { hasNextPage endCursor } } }`, "
                + "so that each page's cursor goes in the variables; no job written\n")
            #expect(!FileManager.default.fileExists(atPath: folder + "/job.yaml"))
        }
    }
}
