import Foundation
import MirrorTestSupport
import Testing

/// `mirror init URL`: the job written from an API's answers passes `mirror check`, and
/// `mirror run` of it stores every record the API holds.
@Suite("mirror init, the binary", .timeLimit(.minutes(6)))
struct InitBinaryTests {
    /// Seven records, their `id`s integers past 64 bits (12345678901234567891…7).
    private static let ids = (1...7).map { "1234567890123456789\($0)" }

    private static func records(_ page: ArraySlice<String>) -> String {
        "[" + page.map { #"{"id":\#($0),"name":"n\#($0)"}"# }.joined(separator: ",") + "]"
    }

    /// Page `page` (from 1) of `size` records.
    private static func slice(_ page: Int, size: Int) -> ArraySlice<String> {
        let start = min((page - 1) * size, ids.count)
        return ids[start..<min(start + size, ids.count)]
    }

    /// Runs init, check and run in a fresh folder; the ids the run stored, in walk order.
    private func initCheckRun(_ url: String, in folder: String, environment: [String: String] = [:],
                              expect stdout: String? = nil, table: String = "items") async throws -> (ids: [String], file: String, stderr: String) {
        let initialized = try await mirror(["init", url, "--out", "jobs/api.yaml"], in: folder, environment: environment)
        #expect(initialized.status == 0, "\(initialized.stderr)")
        #expect(initialized.stdout == (stdout ?? "wrote jobs/api.yaml (job 'items', table 'items')\nnext: mirror run jobs/api.yaml\n"))
        let checked = try await mirror(["check", "jobs/api.yaml"], in: folder, environment: environment)
        #expect(checked.status == 0, "\(checked.stderr)")
        let run = try await mirror(["run", "jobs/api.yaml", "--output", "out", "--quiet"], in: folder, environment: environment)
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        let stored = try await sqlite(folder + "/out/\(table).sqlite", "SELECT id FROM \(table) ORDER BY position")
        let file = try String(contentsOfFile: folder + "/jobs/api.yaml", encoding: .utf8)
        return (stored.split(separator: "\n").map(String.init), file, initialized.stderr)
    }

    @Test("a next URL in the body (DRF's page numbers): the file, check, and a run storing every record")
    func nextURL() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "1") ?? 1
            let next = page * 3 < Self.ids.count ? #""\#(request.base)/api/items/?page=\#(page + 1)""# : "null"
            return .json(#"{"count":7,"next":\#(next),"previous":null,"results":\#(Self.records(Self.slice(page, size: 3)))}"#)
        }) { server in
            let (ids, file, stderr) = try await initCheckRun(server.base + "/api/items/", in: folder)
            #expect(ids == Self.ids)
            #expect(stderr == "")
            #expect(file == """
                # written by `mirror init` from the API's answers; check it with `mirror check`, then `mirror run` it
                version: 1
                jobs:
                  - name: items
                    url: "\(server.base)/api/items/"
                    # the answer's `next` holds the next page's URL (page 2 confirmed: 3 new ids)
                    next: { url: next }
                    # the array of objects, 3 of them
                    records: results
                    # named like an id, present and unique in all 3 records; numbers past 64 bits are kept exactly as written
                    id: id
                    table: items

                """)
        }
    }

    @Test("a Link header over a top-level array")
    func link() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "1") ?? 1
            let link = page * 2 < Self.ids.count ? [("Link", #"<\#(request.base)/items?per_page=2&page=\#(page + 1)>; rel="next""#)] : []
            return .json(Self.records(Self.slice(page, size: 2)), headers: link)
        }) { server in
            let (ids, file, _) = try await initCheckRun(server.base + "/items?per_page=2", in: folder)
            #expect(ids == Self.ids)
            #expect(file.contains("    # the answer's Link header has rel=\"next\" (page 2 confirmed: 2 new ids)\n    next: link\n"))
        }
    }

    @Test("page numbers in the URL with a short last page")
    func pageNumbers() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "1") ?? 1
            return .json(#"{"data":\#(Self.records(Self.slice(page, size: 3)))}"#)
        }) { server in
            let (ids, file, _) = try await initCheckRun(server.base + "/items?page=1&per_page=3", in: folder)
            #expect(ids == Self.ids)
            #expect(file.contains("""
                    # the URL's `page=1`: page numbers; a page of fewer than 3 records is the last (page 2 confirmed: 3 new ids)
                    url: "\(server.base)/items?page={page}&per_page=3"
                    pages: { from: 1, step: 1 }
                    stop: { short: 3 }

                """))
        }
    }

    @Test("pages that overlap (page 2 starts with page 1's last record): confirmed, the overlap said, every record stored once")
    func overlappingPages() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "1") ?? 1
            let start = min((page - 1) * 2, Self.ids.count)
            return .json(#"{"data":\#(Self.records(Self.ids[start..<min(start + 3, Self.ids.count)]))}"#)
        }) { server in
            let (ids, file, stderr) = try await initCheckRun(server.base + "/items?page=1", in: folder)
            #expect(ids == Self.ids)
            let overlap = "page 2 confirmed: 2 new ids; 1 of page 1's came again ('12345678901234567893'): the pages overlap, "
                + "as when records are added while it walks; each id is stored once"
            #expect(stderr == "\(overlap)\n")
            #expect(file.contains("""
                    # the URL's `page=1`: page numbers; no total, last page or page size in the answer: an empty page ends the walk (\(overlap))
                    url: "\(server.base)/items?page={page}"
                    pages: { from: 1, step: 1 }
                    # the array of objects, 3 of them

                """))
        }
    }

    @Test("a cursor and has_more; a query parameter the API ignores is not kept")
    func cursor() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with({ request in
            // The API reads `after`; `cursor` and `next_cursor` it ignores.
            let page = Int(request.parameter("after")?.dropFirst() ?? "1") ?? 1
            let more = page * 3 < Self.ids.count
            return .json(#"{"items":\#(Self.records(Self.slice(page, size: 3))),"next_cursor":"c\#(page + 1)","has_more":\#(more)}"#)
        }) { server in
            let (ids, file, _) = try await initCheckRun(server.base + "/items", in: folder)
            #expect(ids == Self.ids)
            #expect(file.contains("""
                    # the first request leaves the `{cursor}` parameter out
                    url: "\(server.base)/items?after={cursor}"
                    # the answer's `next_cursor` holds a cursor and `has_more` says whether more follow; it goes back as `after` (page 2 confirmed: 3 new ids)
                    next: { cursor: next_cursor }
                    stop: { has_more: has_more }

                """))
        }
    }

    @Test("two arrays of objects (JSON:API's data and included): the larger is walked, both named on stderr and in the file")
    func twoArrays() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with({ request in
            let page = Int(request.parameter("page%5Bnumber%5D") ?? "1") ?? 1
            let next = page * 3 < Self.ids.count ? #""\#(request.base)/articles?page%5Bnumber%5D=\#(page + 1)""# : "null"
            let data = Self.slice(page, size: 3).map { #"{"type":"articles","id":"\#($0)"}"# }.joined(separator: ",")
            return .json(#"{"data":[\#(data)],"included":[{"type":"people","id":"9"}],"links":{"next":\#(next)}}"#)
        }) { server in
            let (ids, file, stderr) = try await initCheckRun(server.base + "/articles", in: folder,
                                                             expect: "wrote jobs/api.yaml (job 'articles', table 'articles')\n"
                                                                 + "next: mirror run jobs/api.yaml\n", table: "articles")
            #expect(ids == Self.ids)
            #expect(stderr == "two arrays of objects: `data` (3) and `included` (1); chose `data`\n")
            #expect(file.hasPrefix("""
                # written by `mirror init` from the API's answers; check it with `mirror check`, then `mirror run` it
                # two arrays of objects: `data` (3) and `included` (1); chose `data`
                version: 1

                """))
            #expect(file.contains("    # the largest of two arrays of objects\n    records: data\n"))
            #expect(file.contains("    next: { url: links.next }\n"))
        }
    }

    @Test("one page, its next URL null: the paging is written, and said to be unconfirmed")
    func onePage() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with({ _ in .json(#"{"count":2,"next":null,"results":[{"id":"a"},{"id":"b"}]}"#) }) { server in
            let (ids, file, stderr) = try await initCheckRun(server.base + "/api/items/", in: folder)
            #expect(ids == ["a", "b"])
            #expect(stderr == "page 2 not confirmed: no next page after page 1\n")
            #expect(file.contains("""
                # page 2 not confirmed: no next page after page 1
                version: 1
                """))
            #expect(file.contains("""
                    # the answer's `next` is null: a next page's URL goes there, none on this one (page 2 not confirmed: no next page after page 1)
                    next: { url: next }

                """))
        }
    }

    @Test("--auth: the block is copied with its placeholder, the secret sent and never written or printed")
    func auth() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try "# the API's token\nauth:\n  type: bearer\n  token: \"${ITEMS_TOKEN}\"\n"
            .write(toFile: folder + "/auth.yaml", atomically: true, encoding: .utf8)
        try await FixtureServer.with({ request in
            guard request.headers["authorization"] == "Bearer tok-5ecret" else { return .json(#"{"detail":"no"}"#, status: 401) }
            return .json(#"[{"id":"a"},{"id":"b"}]"#)
        }) { server in
            let environment = ["ITEMS_TOKEN": "tok-5ecret"]
            let initialized = try await mirror(["init", server.base + "/v1/items", "--out", "jobs/api.yaml", "--auth", "auth.yaml"],
                                               in: folder, environment: environment)
            #expect(initialized.status == 0, "\(initialized.stderr)")
            #expect(initialized.stderr == "no paging seen: the job makes one request\n")
            let file = try String(contentsOfFile: folder + "/jobs/api.yaml", encoding: .utf8)
            #expect(file.hasSuffix("    table: items\n    auth:\n      type: bearer\n      token: \"${ITEMS_TOKEN}\"\n"))
            #expect(!file.contains("tok-5ecret"))
            let run = try await mirror(["run", "jobs/api.yaml", "--output", "out", "--quiet"], in: folder, environment: environment)
            #expect(run.status == 0)
            #expect(try await sqlite(folder + "/out/items.sqlite", "SELECT id FROM items ORDER BY position") == "a\nb\n")
            // Without the variable, nothing is asked and nothing written.
            let unset = try await mirror(["init", server.base + "/v1/items", "--out", "jobs/other.yaml", "--auth", "auth.yaml"],
                                         in: folder)
            #expect(unset.status == 2)
            #expect(unset.stderr == "error: auth.yaml: environment variable ITEMS_TOKEN is not set; no job written\n")
            #expect(!FileManager.default.fileExists(atPath: folder + "/jobs/other.yaml"))
        }
    }

    @Test("what init cannot decide: exit 2, the reason, no file; an existing file is kept without --force")
    func undecidable() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with({ request in
            switch request.path {
            case "/same": return .json(#"{"data":[{"id":1},{"id":2}]}"#)
            case "/repeats": return .json(#"{"data":[{"id":1},{"id":1}]}"#)
            case "/missing": return .text("not here", status: 404)
            default: return .json(#"{"status":"ok"}"#)
            }
        }) { server in
            let same = try await mirror(["init", server.base + "/same?page=1", "--out", "same.yaml"], in: folder)
            #expect(same.status == 2)
            #expect(same.stdout == "")
            #expect(same.stderr == "error: paging by `page` numbers: page 2 repeats page 1's 2 ids: "
                + "the API does not page this way; no job written\n")
            #expect(!FileManager.default.fileExists(atPath: folder + "/same.yaml"))
            let repeats = try await mirror(["init", server.base + "/repeats", "--out", "repeats.yaml"], in: folder)
            #expect(repeats.status == 2)
            #expect(repeats.stderr == "error: GET \(server.base)/repeats: HTTP 200: no id in the 2 records of `data`: "
                + "`id` '1' repeats (records 1 and 2); no job written\n")
            #expect(!FileManager.default.fileExists(atPath: folder + "/repeats.yaml"))
            let none = try await mirror(["init", server.base + "/status"], in: folder)
            #expect(none.status == 2)
            #expect(none.stderr == "error: GET \(server.base)/status: HTTP 200: no array of objects in the answer "
                + "(its members: `status`); no job written: name the records with `records:` in a job written by hand\n")
            #expect(!FileManager.default.fileExists(atPath: folder + "/jobs"))
            let missing = try await mirror(["init", server.base + "/missing"], in: folder)
            #expect(missing.status == 1)
            #expect(missing.stderr == "error: GET \(server.base)/missing: HTTP 404: not here; no job written\n")
            let ftp = try await mirror(["init", "ftp://example.com/items"], in: folder)
            #expect(ftp.status == 2)
            #expect(ftp.stderr == "error: 'ftp://example.com/items' is not an http or https URL\n")
            #expect(!FileManager.default.fileExists(atPath: folder + "/jobs"))

            try "kept\n".write(toFile: folder + "/kept.yaml", atomically: true, encoding: .utf8)
            let kept = try await mirror(["init", server.base + "/same?page=1", "--out", "kept.yaml"], in: folder)
            #expect(kept.status == 2)
            #expect(kept.stderr == "error: kept.yaml exists: give another --out, or --force to overwrite it\n")
            #expect(try String(contentsOfFile: folder + "/kept.yaml", encoding: .utf8) == "kept\n")
            #expect(server.requests.filter { $0.path == "/same" }.map(\.query) == ["page=1", "page=1", "page=2"])
        }
    }

    @Test("--openapi: a POST search paging by a page number in its body walks every record")
    func openAPIPostSearch() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with({ request in
            guard request.method == "POST", request.path == "/items/search",
                  let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any],
                  body["query"] as? String == "", let page = body["page"] as? Int, body["size"] as? Int == 3 else {
                return .text("no", status: 400)
            }
            return .json(#"{"total_pages":3,"results":\#(Self.records(Self.slice(page, size: 3)))}"#)
        }) { server in
            try """
                openapi: 3.1.0
                servers: [{url: "\(server.base)"}]
                paths:
                  /items/search:
                    post:
                      requestBody:
                        content:
                          application/json:
                            schema:
                              type: object
                              required: [query]
                              properties:
                                query: { type: string, example: "" }
                                page: { type: integer, default: 1 }
                                size: { type: integer, default: 3 }
                      responses:
                        "200":
                          content:
                            application/json:
                              schema:
                                type: object
                                properties:
                                  results: { type: array, items: { type: object, properties: { id: { type: integer } } } }
                                  total_pages: { type: integer }

                """.write(toFile: folder + "/api.yaml", atomically: true, encoding: .utf8)
            let initialized = try await mirror(["init", "--openapi", "api.yaml", "--out", "jobs/api.yaml"], in: folder)
            #expect(initialized.status == 0, "\(initialized.stderr)")
            let checked = try await mirror(["check", "jobs/api.yaml"], in: folder)
            #expect(checked.status == 0, "\(checked.stderr)")
            let run = try await mirror(["run", "jobs/api.yaml", "--output", "out", "--quiet"], in: folder)
            #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
            #expect(try await sqlite(folder + "/out/items_search.sqlite", "SELECT id FROM items_search ORDER BY position")
                == Self.ids.map { $0 + "\n" }.joined())
        }
    }
}

/// `mirror init` on Datasette itself (`scripts/auth-servers/datasette_server.py`).
@Suite("mirror init on Datasette", .enabled(if: AuthServer.python != nil, "MIRROR_TEST_PYTHON is not set (scripts/test.sh sets it)"),
       .timeLimit(.minutes(6)))
struct InitDatasetteTests {
    @Test("Datasette's next_url: the job walks every row of the table")
    func datasette() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await AuthServer.with("datasette_server.py", ["--rows", "8"]) { server in
            let url = server.base + "/items/items.json?_shape=objects&_size=3"
            let initialized = try await mirror(["init", url], in: folder)
            #expect(initialized.status == 0, "\(initialized.stderr)")
            #expect(initialized.stdout == "wrote jobs/items.yaml (job 'items', table 'items')\nnext: mirror run jobs/items.yaml\n")
            #expect(initialized.stderr == "")
            let file = try String(contentsOfFile: folder + "/jobs/items.yaml", encoding: .utf8)
            #expect(file.contains("""
                    url: "\(url)"
                    # the answer's `next_url` holds the next page's URL (page 2 confirmed: 3 new ids)
                    next: { url: next_url }
                    # the array of objects, 3 of them
                    records: rows

                """))
            #expect(try await mirror(["check", "jobs/items.yaml"], in: folder).status == 0)
            let run = try await mirror(["run", "jobs/items.yaml", "--output", "out", "--quiet"], in: folder)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try await sqlite(folder + "/out/items.sqlite", "SELECT id FROM items ORDER BY position")
                == (1...8).map { "\($0)\n" }.joined())
        }
    }
}
