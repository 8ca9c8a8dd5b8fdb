import Foundation
import FoundationXML
import Logging
@testable import MirrorCore
@testable import MirrorHTTP
@testable import MirrorModel
import MirrorTestSupport
import Testing

/// Serves `api` by `?page=`.
private func serve(_ api: PagedAPI, extra: @escaping @Sendable (Int) -> String = { _ in "" }) -> @Sendable (FixtureRequest) async -> FixtureResponse {
    { request in
        let page = Int(request.parameter("page") ?? "") ?? 0
        return .json(api.body(page: page, extra: extra(page)))
    }
}

@Suite("verify", .timeLimit(.minutes(6)))
struct VerifyTests {
    @Test("the drift table tells ids apart byte for byte, through every time it grows, and names the first page")
    func firstPages() {
        var table = FirstPages()
        func note(_ id: String, _ page: Int) -> Int? {
            var id = id
            return id.withUTF8 { table.note($0, page: page) }
        }
        for n in 0 ..< 5000 { #expect(note(String(n), n / 100) == nil) }
        #expect(table.count == 5000)
        #expect(note("4321", 99) == 43)
        #expect(note("0", 99) == 0)
        #expect(note("caf\u{E9}", 1) == nil)
        // The same word decomposed: another id, as SQLite sees it.
        #expect(note("cafe\u{301}", 2) == nil)
        #expect(note("caf\u{E9}", 3) == 1)
        #expect(note("", 4) == nil)
        #expect(note("", 5) == 4)
        #expect(table.count == 5003)
    }

    func verify(_ yaml: String, _ handler: @escaping @Sendable (FixtureRequest) async -> FixtureResponse,
                maxPages: Int? = nil, environment: [String: String] = [:]) async throws -> (summary: VerifySummary, base: String, harness: Harness) {
        let harness = try Harness()
        let (summary, base, output) = try await FixtureServer.with(handler) { server in
            let file = try harness.load(yaml, server: server, environment: environment)
            return (try await verify(file, maxPages: maxPages), server.base, file.output)
        }
        // The job file names an output folder inside the test's folder: nothing is stored
        // there, and it is not even created.
        #expect(output == harness.output)
        #expect(!FileManager.default.fileExists(atPath: harness.output))
        #expect(try FileManager.default.contentsOfDirectory(atPath: harness.folder) == ["jobs.yaml"])
        return (summary, base, harness)
    }

    func verify(_ file: JobFile, maxPages: Int? = nil) async throws -> VerifySummary {
        var options = Verifier.Options()
        options.maxPages = maxPages
        options.retry = RetryPolicy(baseDelay: 0.01)
        return try await Verifier(client: HTTPClient(), logger: Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }))
            .verify([file], options: options)
    }

    struct FileState: Equatable {
        var bytes: Data
        var modified: Date
    }

    /// Every file in a folder by name: its bytes and modification time.
    func snapshot(_ folder: String) throws -> [String: FileState] {
        var files: [String: FileState] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            let path = folder + "/" + name
            let modified = try #require(try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date)
            files[name] = FileState(bytes: try Data(contentsOf: URL(fileURLWithPath: path)), modified: modified)
        }
        return files
    }

    func faults(_ summary: VerifySummary) -> [String] {
        summary.jobs.flatMap(\.faults).map(\.description)
    }

    @Test("a next path absent from the first page of records is a fault naming the keys the response has")
    func missingNext() async throws {
        let (summary, _, _) = try await verify(itemsJob("next: \"@odata.nextLink\"", url: "BASE/odata", output: "cache")) { _ in
            .json(#"{"@odata.context":"x","data":{"list":[{"id":"1"}]},"@odata.nextLink":"http://elsewhere/2"}"#)
        }
        #expect(faults(summary) == [
            "page 1: '@odata.nextLink' is not in the response (its keys: '@odata.context', 'data', '@odata.nextLink')",
        ])
        #expect(summary.jobs[0].faults.map(\.kind) == [.missingPath])
    }

    @Test("a clean API passes: every page walked, nothing stored")
    func clean() async throws {
        let (summary, _, harness) = try await verify(itemsJob(output: "cache"), serve(PagedAPI(ids: [["1", "2"], ["3"], ["4"]])))
        #expect(summary.passed)
        #expect(faults(summary) == [])
        let job = try #require(summary.jobs.first)
        #expect(job.walk.pages == 4 && job.walk.counts.new == 4 && job.walk.stop == .emptyPage(page: 4))
        #expect(summary.text.hasPrefix("items: ok, 4 pages, 4 records, ended: empty page 4, "))
        #expect(summary.junitXML.contains(#"<testcase classname="\#(harness.folder)/jobs.yaml" name="items" time=""#))
        #expect(!summary.junitXML.contains("<failure"))
    }

    @Test("a page that is not JSON is a fault at its page, and the walk stops there")
    func badPage() async throws {
        let api = PagedAPI(ids: [["1"], ["2"], ["3"]])
        let (summary, base, _) = try await verify(itemsJob("retries: 0", output: "cache"), { request in
            request.parameter("page") == "2" ? .text("<html>oops</html>", status: 200, contentType: "text/html") : .json(api.body(page: Int(request.parameter("page") ?? "") ?? 0))
        })
        #expect(faults(summary) == ["page 2: GET \(base)/items?page=2: HTTP 200: response is HTML, not JSON"])
        #expect(summary.jobs[0].faults[0].kind == .badPage)
        #expect(!summary.passed)
    }

    @Test("a wait the API asks for longer than max_wait is a fault at its page, and the walk stops there")
    func deferred() async throws {
        let api = PagedAPI(ids: [["1"], ["2"], ["3"]])
        let (summary, base, _) = try await verify(itemsJob("concurrency: 1", output: "cache"), { request in
            request.parameter("page") == "2"
                ? FixtureResponse(status: 429, headers: [("Retry-After", "3600")], body: Array("slow down".utf8))
                : .json(api.body(page: Int(request.parameter("page") ?? "") ?? 0))
        })
        #expect(faults(summary) == ["page 2: GET \(base)/items?page=2: HTTP 429: Retry-After asks to wait 1h, longer than "
            + "max_wait 5m; the walk stopped here"])
        #expect(summary.text.hasPrefix("items: 1 fault, 1 page, 1 records, ended: deferred, "))
        #expect(!summary.passed)
    }

    @Test("a page that breaks validate is a fault naming path, expected and found types")
    func validate() async throws {
        let (summary, base, _) = try await verify(itemsJob("validate: { data.page: string }", output: "cache"), serve(PagedAPI(ids: [["1"]])))
        #expect(faults(summary) == ["page 1: GET \(base)/items?page=1: HTTP 200: 'data.page' must be string, found number"])
        #expect(!summary.passed)
    }

    @Test("a record without an id and an id repeated within a page are faults with page and index")
    func ids() async throws {
        let api = PagedAPI(records: [[#"{"id":"1"}"#, #"{"name":"x"}"#, #"{"id":"2"}"#, #"{"id":"1"}"#, #"{"id":"1"}"#]])
        let (summary, _, _) = try await verify(itemsJob(output: "cache"), serve(api))
        #expect(faults(summary) == [
            "page 1: record 1 has no usable id at 'id' (found nothing)",
            "page 1: id '1' appears 3 times (records 0, 3, 4)",
        ])
        #expect(summary.jobs[0].faults.map(\.kind) == [.missingID, .repeatedID])
        #expect(!summary.passed)
    }

    @Test("an id seen on two pages is drift, naming both pages")
    func drift() async throws {
        let (summary, _, _) = try await verify(itemsJob(output: "cache"), serve(PagedAPI(ids: [["1", "2"], ["3"], ["2", "4"]])))
        #expect(faults(summary) == ["page 3: id '2' was already on page 1 (drift)"])
        #expect(summary.jobs[0].walk.stop == .emptyPage(page: 4))
        #expect(!summary.passed)
    }

    @Test("a cursor seen twice is a loop: the walk stops")
    func cursorLoop() async throws {
        let yaml = """
            version: 1
            output: cache
            jobs:
              - name: feed
                url: "BASE/feed?c={cursor}"
                next: next
                records: items
                id: id
                table: t_feed
            """
        let (summary, _, _) = try await verify(yaml, { request in
            switch request.parameter("c") {
            case nil: return .json(#"{"items":[{"id":"1"}],"next":"A"}"#)
            case "A": return .json(#"{"items":[{"id":"2"}],"next":"B"}"#)
            default: return .json(#"{"items":[{"id":"3"}],"next":"A"}"#)
            }
        })
        #expect(faults(summary) == ["page 3: loop: cursor 'A' seen twice; the walk stopped"])
        #expect(summary.jobs[0].walk.pages == 3)
        #expect(!summary.passed)
    }

    @Test("a next link seen twice is a loop")
    func linkLoop() async throws {
        let yaml = """
            version: 1
            output: cache
            jobs:
              - name: feed
                url: "BASE/feed"
                next: link
                records: items
                id: id
                table: t_feed
            """
        let (summary, base, _) = try await verify(yaml, { request in
            let next = request.parameter("p") == "2" ? "</feed?p=3>" : "</feed?p=2>"
            return .json(#"{"items":[{"id":"\#(request.target)"}]}"#, headers: [("Link", "\(next); rel=\"next\"")])
        })
        #expect(faults(summary) == ["page 3: loop: next URL \(base)/feed?p=2 seen twice; the walk stopped"])
        #expect(!summary.passed)
    }

    @Test("a last page that changes, or that the walk never reaches, is a fault")
    func lastPage() async throws {
        let api = PagedAPI(ids: [["1"], ["2"]])
        let (summary, _, _) = try await verify(itemsJob("stop: { last_page: data.last }\nconcurrency: 1", output: "cache"),
                                               serve(api) { page in page == 1 ? #","last":3"# : #","last":4"# })
        #expect(faults(summary) == [
            "page 2: announces last page 4, page 1 announced 3",
            "page 3: announces last page 4, page 1 announced 3",
            "page 3: the walk ended here (empty page 3) before the last page 4 the responses announce",
        ])
        #expect(!summary.passed)
    }

    @Test("a total that changes, that the walk does not match, or that is not a whole number, is a fault")
    func total() async throws {
        let api = PagedAPI(ids: [["1", "2"], ["3", "4"], ["5", "6"]])
        let (summary, _, _) = try await verify(itemsJob("stop: { total: data.total, last_page: data.last }\nconcurrency: 1", output: "cache"),
                                               serve(api) { page in
                                                   switch page {
                                                   case 1: return #","total":8,"last":4"#
                                                   case 2: return #","total":"8 items","last":4.5"#
                                                   default: return #","total":9"#
                                                   }
                                               })
        #expect(faults(summary) == [
            "page 2: 'data.last' is not a whole number (found number)",
            "page 2: 'data.total' is not a whole number (found string)",
            "page 3: 'data.last' is not a whole number (found nothing)",
            "page 3: announces 9 records in all, page 1 announced 8",
            "page 4: 'data.last' is not a whole number (found nothing)",
            "page 4: announces 9 records in all, page 1 announced 8",
            "page 4: the walk ended here (empty page 4) with 6 records, not the 9 the responses announce",
        ])
        #expect(!summary.passed)
    }

    @Test("a walk cut by --max-pages is a fault: the rest was not verified")
    func maxPages() async throws {
        let (summary, _, _) = try await verify(itemsJob(output: "cache"), serve(PagedAPI(ids: [["1"], ["2"], ["3"]])), maxPages: 2)
        #expect(faults(summary) == ["page 2: the walk was cut by --max-pages 2: the pages after it were not verified"])
        #expect(summary.jobs[0].faults[0].kind == .maxPages)
        #expect(!summary.passed)
    }

    @Test("ids and errors the server echoes a secret into are redacted in every fault")
    func redacted() async throws {
        let (summary, base, _) = try await verify(itemsJob("retries: 0", url: "BASE/items?page={page}&key=${API_KEY}", output: "cache"), { request in
            let key = request.parameter("key") ?? ""
            switch request.parameter("page") {
            case "1": return .json(PagedAPI(ids: [["k-\(key)", "k-\(key)"]]).body(page: 1))
            case "2": return .json(PagedAPI(ids: [[], ["k-\(key)"]]).body(page: 2))
            default: return .text("<html>\(key)</html>", status: 200, contentType: "text/html")
            }
        }, environment: ["API_KEY": "s3cr3t-XYZ"])
        #expect(faults(summary) == [
            "page 1: id 'k-REDACTED' appears 2 times (records 0, 1)",
            "page 2: id 'k-REDACTED' was already on page 1 (drift)",
            "page 3: GET \(base)/items?page=3&key=REDACTED: HTTP 200: response is HTML, not JSON",
        ])
        #expect(!summary.passed)
        #expect(!summary.text.contains("s3cr3t") && !summary.junitXML.contains("s3cr3t"))
    }

    @Test("an output folder that already holds a database is left exactly as it was")
    func existingOutput() async throws {
        let harness = try Harness()
        try await FixtureServer.with(serve(PagedAPI(ids: [["1", "2"], ["3"]]))) { server in
            #expect(try await harness.run(itemsJob(output: "cache"), server: server).allSucceeded)
            #expect(try harness.ids() == ["1", "2", "3"])
            let before = try snapshot(harness.output)
            #expect(before.keys.sorted() == [".mirror.lock", "t_item.sqlite"])
            let summary = try await verify(try harness.load(itemsJob(output: "cache"), server: server))
            #expect(summary.passed)
            #expect(faults(summary) == [])
            // The same names, and every file's bytes and modification time.
            #expect(try snapshot(harness.output) == before)
        }
    }

    @Test("JUnit XML has one test case per job; a failure lists every fault, escaped, and the XML parses")
    func junit() async throws {
        let yaml = """
            version: 1
            output: cache
            jobs:
              - name: items
                url: "BASE/items?page={page}"
                records: data.list
                id: id
                table: t_item
              - name: clean
                url: "BASE/clean?page={page}"
                records: data.list
                id: id
                table: t_clean
            """
        let faulty = PagedAPI(records: [[#"{"id":"q\"u\no\uffff"}"#, #"{"id":"q\"u\no\uffff"}"#],
                                        [#"{"id":"<a&b>"}"#, #"{"id":"<a&b>"}"#, #"{"x":1}"#]])
        let clean = PagedAPI(ids: [["1"]])
        let (summary, _, harness) = try await verify(yaml, { request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            return .json((request.path == "/clean" ? clean : faulty).body(page: page))
        })
        #expect(!summary.passed)
        #expect(summary.jobs.map(\.passed) == [false, true])
        let xml = summary.junitXML.replacingOccurrences(of: harness.folder + "/", with: "")
            .replacing(#/time="[0-9]+\.[0-9]{3}"/#, with: #"time="T""#)
        #expect(xml == """
            <?xml version="1.0" encoding="UTF-8"?>
            <testsuites name="mirror verify" tests="2" failures="1" errors="0" time="T">
              <testsuite name="jobs.yaml" tests="2" failures="1" errors="0" skipped="0" time="T">
                <testcase classname="jobs.yaml" name="items" time="T">
                  <failure type="page walk" message="3 page-walk faults: page 1: id 'q&quot;u&#10;o\u{FFFD}' appears 2 times (records 0, 1)">page 1: id 'q"u
            o\u{FFFD}' appears 2 times (records 0, 1)
            page 2: record 2 has no usable id at 'id' (found nothing)
            page 2: id '&lt;a&amp;b&gt;' appears 2 times (records 0, 1)</failure>
                </testcase>
                <testcase classname="jobs.yaml" name="clean" time="T"/>
              </testsuite>
            </testsuites>

            """)
        // On Linux, XMLDocument recovers from errors (it drops what it cannot read), so the
        // strict XMLParser checks well-formedness and the values read back check the rest.
        let parser = XMLParser(data: Data(summary.junitXML.utf8))
        #expect(parser.parse())
        #expect(parser.parserError == nil)
        let document = try XMLDocument(data: Data(summary.junitXML.utf8))
        #expect(try document.nodes(forXPath: "//testcase").count == 2)
        let failures = try document.nodes(forXPath: "//failure").compactMap { $0 as? XMLElement }
        #expect(failures.count == 1)
        #expect(failures.first?.attribute(forName: "message")?.stringValue
            == "3 page-walk faults: page 1: id 'q\"u\no\u{FFFD}' appears 2 times (records 0, 1)")
        #expect(failures.first?.stringValue == """
            page 1: id 'q"u
            o\u{FFFD}' appears 2 times (records 0, 1)
            page 2: record 2 has no usable id at 'id' (found nothing)
            page 2: id '<a&b>' appears 2 times (records 0, 1)
            """)
    }

    @Test("XML escaping: markup, quotes, tab, LF and CR as references in attributes; characters XML 1.0 forbids become U+FFFD")
    func escape() {
        let raw = "<a&b> \"q\" 'x'\ttab\nline\rcr\u{0}\u{1B}\u{7F}\u{FFFE}\u{FFFF}\u{10000}"
        #expect(VerifySummary.escape(raw, inAttribute: true)
            == "&lt;a&amp;b&gt; &quot;q&quot; 'x'&#9;tab&#10;line&#13;cr\u{FFFD}\u{FFFD}\u{7F}\u{FFFD}\u{FFFD}\u{10000}")
        #expect(VerifySummary.escape(raw, inAttribute: false)
            == "&lt;a&amp;b&gt; \"q\" 'x'\ttab\nline&#13;cr\u{FFFD}\u{FFFD}\u{7F}\u{FFFD}\u{FFFD}\u{10000}")
    }
}
