import Foundation
@testable import MirrorCore
import MirrorTestSupport
import Testing

/// Serves `api`'s pages at `/items?page=N`, each with `extra(N)` added to its `data`.
private func serve(_ api: PagedAPI, extra: @escaping @Sendable (Int) -> String = { _ in "" })
    -> @Sendable (FixtureRequest) async -> FixtureResponse {
    { request in
        let page = Int(request.parameter("page") ?? "") ?? -1
        return .json(api.body(page: page, extra: extra(page)))
    }
}

@Suite("paging dialects")
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

    @Test("known: record ends a newest-first walk at the page of the first record stored before")
    func knownRecord() async throws {
        let harness = try Harness()
        let first = PagedAPI(ids: [["5", "4"], ["3", "2"], ["1"]])
        let second = PagedAPI(ids: [["7", "6"], ["5", "4"], ["3", "2"], ["1"]])
        let round = SharedCounter()
        try await FixtureServer.with({ request in
            let api = round.value == 0 ? first : second
            return .json(api.body(page: Int(request.parameter("page") ?? "") ?? 0))
        }) { server in
            _ = try await harness.run(itemsJob("stop: { known: record }\nconcurrency: 1"), server: server)
            #expect(server.requests.count == 4)
            round.increment()
            // Page 1 holds only new records; page 2 starts with a known one: the walk ends there.
            let summary = try await harness.run(itemsJob("stop: { known: record }\nconcurrency: 1"), server: server)
            #expect(server.requests.suffix(2).map(\.target) == ["/items?page=1", "/items?page=2"])
            #expect(summary.jobs[0].stopReason == StopReason.knownRecord(page: 2).description)
        }
        #expect(try Set(harness.ids()) == ["1", "2", "3", "4", "5", "6", "7"])
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

    @Test("stop keys are checked: known takes true, false, page or record; short a page size; last_page or pages, not both")
    func stopKeys() throws {
        let harness = try Harness()
        func itemsJob(_ keys: String) -> String { MirrorCoreTests.itemsJob(keys, url: "http://127.0.0.1:1/items?page={page}") }
        #expect(throws: (any Error).self) { try harness.load(itemsJob("stop: { known: newest }")) }
        do {
            _ = try harness.load(itemsJob("stop: { known: newest, short: 0, last_page: a, pages: b }"))
        } catch {
            let path = harness.folder + "/jobs.yaml"
            #expect("\(error)".components(separatedBy: "\n") == [
                "\(path):9:20: 'stop.known' must be true, false, page or record, not 'newest'",
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
}
