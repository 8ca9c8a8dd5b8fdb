import Foundation
import Logging
@testable import MirrorCore
import MirrorTestSupport
import Testing

private func job(_ keys: String = "", url: String = "BASE/items?page={page}") -> String {
    """
    version: 1
    jobs:
      - name: items
        url: "\(url)"
        records: data.list
        id: id
        table: t_item
    \(keys.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
    """
}

/// Serves `api` by `?page=`.
private func serve(_ api: PagedAPI, extra: @escaping @Sendable (Int) -> String = { _ in "" }) -> @Sendable (FixtureRequest) async -> FixtureResponse {
    { request in
        let page = Int(request.parameter("page") ?? "") ?? 0
        return .json(api.body(page: page, extra: extra(page)))
    }
}

@Suite("verify")
struct VerifyTests {
    func verify(_ yaml: String, _ handler: @escaping @Sendable (FixtureRequest) async -> FixtureResponse,
                maxPages: Int? = nil) async throws -> (summary: VerifySummary, base: String, harness: Harness) {
        let harness = try Harness()
        let (summary, base) = try await FixtureServer.with(handler) { server in
            let file = try harness.load(yaml, server: server)
            var options = Verifier.Options()
            options.maxPages = maxPages
            options.retry = RetryPolicy(baseDelay: 0.01)
            let summary = try await Verifier(client: HTTPClient(), logger: Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }))
                .verify([file], options: options)
            return (summary, server.base)
        }
        // Nothing is stored, and the output folder is not even created.
        #expect(!FileManager.default.fileExists(atPath: harness.output))
        return (summary, base, harness)
    }

    func faults(_ summary: VerifySummary) -> [String] {
        summary.jobs.flatMap(\.faults).map(\.description)
    }

    @Test("a clean API passes: every page walked, nothing stored")
    func clean() async throws {
        let (summary, _, harness) = try await verify(job(), serve(PagedAPI(ids: [["1", "2"], ["3"], ["4"]])))
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
        let (summary, base, _) = try await verify(job("retries: 0"), { request in
            request.parameter("page") == "2" ? .text("<html>oops</html>", status: 200, contentType: "text/html") : .json(api.body(page: Int(request.parameter("page") ?? "") ?? 0))
        })
        #expect(faults(summary) == ["page 2: GET \(base)/items?page=2: HTTP 200: response is HTML, not JSON"])
        #expect(summary.jobs[0].faults[0].kind == .badPage)
        #expect(!summary.passed)
    }

    @Test("a page that breaks validate is a fault naming path, expected and found types")
    func validate() async throws {
        let (summary, base, _) = try await verify(job("validate: { data.page: string }"), serve(PagedAPI(ids: [["1"]])))
        #expect(faults(summary) == ["page 1: GET \(base)/items?page=1: HTTP 200: 'data.page' must be string, found number"])
    }

    @Test("a record without an id and an id repeated within a page are faults with page and index")
    func ids() async throws {
        let api = PagedAPI(records: [[#"{"id":"1"}"#, #"{"name":"x"}"#, #"{"id":"2"}"#, #"{"id":"1"}"#, #"{"id":"1"}"#]])
        let (summary, _, _) = try await verify(job(), serve(api))
        #expect(faults(summary) == [
            "page 1: record 1 has no usable id at 'id' (found nothing)",
            "page 1: id '1' appears 3 times (records 0, 3, 4)",
        ])
        #expect(summary.jobs[0].faults.map(\.kind) == [.missingID, .repeatedID])
    }

    @Test("an id seen on two pages is drift, naming both pages")
    func drift() async throws {
        let (summary, _, _) = try await verify(job(), serve(PagedAPI(ids: [["1", "2"], ["3"], ["2", "4"]])))
        #expect(faults(summary) == ["page 3: id '2' was already on page 1 (drift)"])
        #expect(summary.jobs[0].walk.stop == .emptyPage(page: 4))
    }

    @Test("a cursor seen twice is a loop: the walk stops")
    func cursorLoop() async throws {
        let yaml = """
            version: 1
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
            case "": return .json(#"{"items":[{"id":"1"}],"next":"A"}"#)
            case "A": return .json(#"{"items":[{"id":"2"}],"next":"B"}"#)
            default: return .json(#"{"items":[{"id":"3"}],"next":"A"}"#)
            }
        })
        #expect(faults(summary) == ["page 3: loop: cursor 'A' seen twice; the walk stopped"])
        #expect(summary.jobs[0].walk.pages == 3)
    }

    @Test("a next link seen twice is a loop")
    func linkLoop() async throws {
        let yaml = """
            version: 1
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
    }

    @Test("a last page that changes, or that the walk never reaches, is a fault")
    func lastPage() async throws {
        let api = PagedAPI(ids: [["1"], ["2"]])
        let (summary, _, _) = try await verify(job("stop: { last_page: data.last }\nconcurrency: 1"),
                                               serve(api) { page in page == 1 ? #","last":3"# : #","last":4"# })
        #expect(faults(summary) == [
            "page 2: announces last page 4, page 1 announced 3",
            "page 3: announces last page 4, page 1 announced 3",
            "page 3: the walk ended here (empty page 3) before the last page 4 the responses announce",
        ])
    }

    @Test("a walk cut by --max-pages is a fault: the rest was not verified")
    func maxPages() async throws {
        let (summary, _, _) = try await verify(job(), serve(PagedAPI(ids: [["1"], ["2"], ["3"]])), maxPages: 2)
        #expect(faults(summary) == ["page 2: the walk was cut by --max-pages 2: the pages after it were not verified"])
        #expect(summary.jobs[0].faults[0].kind == .maxPages)
    }

    @Test("JUnit XML has one test case per job; a failure lists every fault, escaped")
    func junit() async throws {
        let api = PagedAPI(records: [[#"{"id":"<a&b>"}"#, #"{"id":"<a&b>"}"#, #"{"x":1}"#]])
        let (summary, _, harness) = try await verify(job(), serve(api))
        let xml = summary.junitXML.replacingOccurrences(of: harness.folder + "/", with: "")
        let time = try #require(xml.firstMatch(of: #/testcase classname="jobs.yaml" name="items" time="([0-9.]+)"/#)?.output.1)
        #expect(xml == """
            <?xml version="1.0" encoding="UTF-8"?>
            <testsuites name="mirror verify" tests="1" failures="1" errors="0" time="\(time)">
              <testsuite name="jobs.yaml" tests="1" failures="1" errors="0" skipped="0" time="\(time)">
                <testcase classname="jobs.yaml" name="items" time="\(time)">
                  <failure type="page walk" message="2 page-walk faults: page 1: record 2 has no usable id at 'id' (found nothing)">page 1: record 2 has no usable id at 'id' (found nothing)
            page 1: id '&lt;a&amp;b&gt;' appears 2 times (records 0, 1)</failure>
                </testcase>
              </testsuite>
            </testsuites>

            """)
    }
}
