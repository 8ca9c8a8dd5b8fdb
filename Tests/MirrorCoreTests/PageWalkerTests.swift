import Foundation
import GRDB
@testable import MirrorModel
@testable import MirrorStore
import MirrorTestSupport
import Synchronization
import Testing

private let threePages = PagedAPI(ids: [["1", "2", "3"], ["4", "5"], ["6"]])

@Suite("page walk", .timeLimit(.minutes(6)))
struct PageWalkerTests {
    @Test("{page} walks from..to and stores every record in walk order")
    func pageRange() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            .json(threePages.body(page: Int(request.parameter("page") ?? "") ?? 0))
        }) { server in
            let summary = try await harness.run(itemsJob("pages: { from: 1, to: 3 }"), server: server)
            // Requested concurrently, so in any order: never past pages.to.
            #expect(server.requests.map(\.target).sorted() == ["/items?page=1", "/items?page=2", "/items?page=3"])
            return summary
        }
        #expect(try harness.ids() == ["1", "2", "3", "4", "5", "6"])
        let report = try #require(summary.jobs.first)
        #expect(report.succeeded)
        #expect(report.pages.total == 3)
        #expect(report.records == JobOutcome.Records(new: 6, updated: 0, unchanged: 0, rejected: 0, pruned: 0))
        #expect(report.stopReason == StopReason.endOfPages(page: 3).description)
        #expect(try harness.record("4") == #"{"id":"4","page":2}"#)
    }

    @Test("offset paging steps the page value by `step`")
    func offsetPaging() async throws {
        let harness = try Harness()
        try await FixtureServer.with({ request in
            let offset = Int(request.parameter("offset") ?? "") ?? -1
            let ids = offset < 250 ? [String(offset), String(offset + 1)] : []
            return .json(#"{"items":[\#(ids.map { #"{"id":\#($0)}"# }.joined(separator: ","))]}"#)
        }) { server in
            let yaml = """
                version: 1
                jobs:
                  - name: items
                    url: "BASE/items?offset={page}&limit=100"
                    pages: { from: 0, step: 100 }
                    concurrency: 1
                    records: items
                    id: id
                    table: t_item
                """
            let summary = try await harness.run(yaml, server: server)
            #expect(server.requests.map(\.target) == [
                "/items?offset=0&limit=100", "/items?offset=100&limit=100", "/items?offset=200&limit=100",
                "/items?offset=300&limit=100",
            ])
            #expect(summary.jobs[0].stopReason == StopReason.emptyPage(page: 300).description)
        }
        #expect(try harness.ids() == ["0", "1", "100", "101", "200", "201"])
    }

    @Test("a cursor in the body is substituted for {cursor} until it is null")
    func cursorPaging() async throws {
        let harness = try Harness()
        try await FixtureServer.with({ request in
            switch request.parameter("cursor") {
            case nil: return .json(#"{"items":[{"id":"a"}],"next":"c 2/x"}"#)
            case "c 2/x": return .json(#"{"items":[{"id":"b"}],"next":"c3"}"#)
            default: return .json(#"{"items":[{"id":"c"}],"next":null}"#)
            }
        }) { server in
            let yaml = """
                version: 1
                jobs:
                  - name: items
                    url: "BASE/items?cursor={cursor}"
                    next: next
                    records: items
                    id: id
                    table: t_item
                """
            let summary = try await harness.run(yaml, server: server)
            #expect(server.requests.map(\.target) == ["/items", "/items?cursor=c%202%2Fx", "/items?cursor=c3"])
            #expect(summary.jobs[0].stopReason == StopReason.noNextPage(page: 3).description)
        }
        #expect(try harness.ids() == ["a", "b", "c"])
    }

    @Test("an absolute next URL in the body is followed as is")
    func nextURLInBody() async throws {
        let harness = try Harness()
        let base = SharedText()
        try await FixtureServer.with({ request in
            switch request.path {
            case "/start": return .json(#"{"items":[{"id":"1"}],"paging":{"next":"\#(base.value)/p2?token=x"}}"#)
            default: return .json(#"{"items":[{"id":"2"}],"paging":{}}"#)
            }
        }) { server in
            base.value = server.base
            let yaml = itemsJob("next: paging.next", url: "BASE/start").replacingOccurrences(of: "data.list", with: "items")
            _ = try await harness.run(yaml, server: server)
            #expect(server.requests.map(\.target) == ["/start", "/p2?token=x"])
        }
        #expect(try harness.ids() == ["1", "2"])
    }

    @Test("next: link follows RFC 8288 rel=\"next\", relative targets included")
    func linkHeader() async throws {
        let harness = try Harness()
        try await FixtureServer.with({ request in
            switch request.parameter("p") {
            case nil: return .json(#"{"data":{"list":[{"id":"1"}]}}"#, headers: [("Link", #"</news?p=2>; rel="next", </news?p=9>; rel="last""#)])
            case "2": return .json(#"{"data":{"list":[{"id":"2"}]}}"#, headers: [("Link", #"</news>; rel="first", </news?p=3>; rel="prev next""#)])
            default: return .json(#"{"data":{"list":[{"id":"3"}]}}"#, headers: [("Link", #"</news>; rel="first""#)])
            }
        }) { server in
            _ = try await harness.run(itemsJob("next: link", url: "BASE/news"), server: server)
            #expect(server.requests.map(\.target) == ["/news", "/news?p=2", "/news?p=3"])
        }
        #expect(try harness.ids() == ["1", "2", "3"])
    }

    @Test("stop.status ends the walk cleanly on the listed status")
    func stopStatus() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            return page <= 2 ? .json(threePages.body(page: page)) : .text("gone", status: 404)
        }) { server in
            try await harness.run(itemsJob("stop: { status: [404], empty: false }"), server: server)
        }
        #expect(summary.jobs[0].succeeded)
        #expect(summary.jobs[0].stopReason == StopReason.status(404, page: 3).description)
        #expect(try harness.ids() == ["1", "2", "3", "4", "5"])
    }

    @Test("stop.last_page ends the walk on the page the response names as last")
    func stopLastPage() async throws {
        let harness = try Harness()
        try await FixtureServer.with({ request in
            .json(threePages.body(page: Int(request.parameter("page") ?? "") ?? 0, extra: #","last":2"#))
        }) { server in
            let summary = try await harness.run(itemsJob("stop: { last_page: data.last }\nconcurrency: 1"), server: server)
            #expect(server.requests.count == 2)
            #expect(summary.jobs[0].stopReason == StopReason.lastPage(page: 2).description)
        }
        #expect(try harness.ids() == ["1", "2", "3", "4", "5"])
    }

    @Test("stop.total ends the walk once the records walked reach the total a response announces; a 304 counts too")
    func stopTotal() async throws {
        let harness = try Harness()
        try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            if request.headers["if-none-match"] == "\"p\(page)\"" { return FixtureResponse(status: 304, body: []) }
            return .json(threePages.body(page: page, extra: #","total":5"#), headers: [("ETag", "\"p\(page)\"")])
        }) { server in
            let yaml = itemsJob("stop: { total: data.total }\nconcurrency: 1\nprune: true")
            let summary = try await harness.run(yaml, server: server)
            #expect(server.requests.map(\.target) == ["/items?page=1", "/items?page=2"])
            #expect(summary.jobs[0].stopReason == StopReason.total(5, page: 2).description)
            // Pages answered 304: their stored totals and elements still count.
            let again = try await harness.run(yaml, server: server)
            #expect(again.jobs[0].pages.notModified == 2)
            #expect(again.jobs[0].stopReason == StopReason.total(5, page: 2).description)
            #expect(again.jobs[0].records.pruned == 0)
        }
        #expect(try harness.ids() == ["1", "2", "3", "4", "5"])
    }

    @Test("stop.known ends an incremental walk at a page of known ids")
    func stopKnown() async throws {
        let harness = try Harness()
        let first = PagedAPI(ids: [["5", "4"], ["3", "2"], ["1"]])
        let second = PagedAPI(ids: [["7", "6"], ["5", "4"], ["3", "2"], ["1"]])
        let round = SharedCounter()
        try await FixtureServer.with({ request in
            let api = round.value == 0 ? first : second
            return .json(api.body(page: Int(request.parameter("page") ?? "") ?? 0))
        }) { server in
            _ = try await harness.run(itemsJob("stop: { known: true }\nconcurrency: 1"), server: server)
            #expect(server.requests.count == 4)
            round.increment()
            let summary = try await harness.run(itemsJob("stop: { known: true }\nconcurrency: 1"), server: server)
            #expect(server.requests.count == 6)
            #expect(summary.jobs[0].stopReason == StopReason.knownPage(page: 2).description)
            // Ids 5 and 4 moved from page 1 to page 2: their records changed.
            let counts = summary.jobs[0].records
            #expect((counts.new, counts.updated, counts.unchanged) == (2, 2, 0))
        }
        #expect(try Set(harness.ids()) == ["1", "2", "3", "4", "5", "6", "7"])
    }

    @Test("--max-pages caps the walk and the walk is not complete")
    func maxPages() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            .json(threePages.body(page: Int(request.parameter("page") ?? "") ?? 0))
        }) { server in
            try await harness.run(itemsJob(""), server: server, maxPages: 2)
        }
        #expect(summary.jobs[0].succeeded)
        #expect(summary.jobs[0].stopReason == StopReason.maxPages(2).description)
        #expect(!summary.jobs[0].complete)
        #expect(try harness.ids() == ["1", "2", "3", "4", "5"])
    }

    @Test("records repeated across pages are stored once, at their last walk position")
    func dedupeAcrossPages() async throws {
        let harness = try Harness()
        let api = PagedAPI(records: [
            [#"{"id":"1","v":1}"#, #"{"id":"2","v":1}"#, #"{"id":"2","v":2}"#],
            [#"{"id":"2","v":3}"#, #"{"id":"3","v":1}"#],
        ])
        let summary = try await FixtureServer.with({ request in
            .json(api.body(page: Int(request.parameter("page") ?? "") ?? 0))
        }) { server in
            try await harness.run(itemsJob(""), server: server)
        }
        #expect(try harness.ids() == ["1", "2", "3"])
        #expect(try harness.record("2") == #"{"id":"2","v":3}"#)
        let counts = summary.jobs[0].records
        #expect((counts.new, counts.updated, counts.unchanged) == (3, 1, 0))
        let positions = try await harness.database("t_item.sqlite").read { db in
            try Int.fetchAll(db, sql: "SELECT position FROM t_item ORDER BY id")
        }
        #expect(positions == [0, 2, 3])
    }

    @Test("ids above 2^53 survive to the byte, as numbers and as strings")
    func bigIDs() async throws {
        let harness = try Harness()
        let body = #"{"data":{"list":[{"id":1234567890123456789,"x":12345678901234567890123.50},{"id":"9007199254740993123"},{"id":-17}]}}"#
        try await FixtureServer.with({ _ in .json(body) }) { server in
            _ = try await harness.run(itemsJob("", url: "BASE/all"), server: server)
        }
        #expect(try harness.ids() == ["1234567890123456789", "9007199254740993123", "-17"])
        #expect(try harness.record("1234567890123456789") == #"{"id":1234567890123456789,"x":12345678901234567890123.50}"#)
    }

    @Test("unicode and escapes are stored as served, whitespace outside strings dropped")
    func unicode() async throws {
        let harness = try Harness()
        let body = """
            {"data": {"list": [
              {"id": "zü-1", "city": "Zürich", "name": "東京 \\u00e9 \\"q\\"", "emoji": "😀", "spaced": "a  b"}
            ]}}
            """
        try await FixtureServer.with({ _ in .json(body) }) { server in
            _ = try await harness.run(itemsJob("", url: "BASE/all"), server: server)
        }
        #expect(try harness.ids() == ["zü-1"])
        #expect(try harness.record("zü-1") == #"{"id":"zü-1","city":"Zürich","name":"東京 \u00e9 \"q\"","emoji":"😀","spaced":"a  b"}"#)
    }

    @Test("accounts partition records: the same id is stored once per account")
    func accounts() async throws {
        let harness = try Harness()
        try await FixtureServer.with({ request in
            let who = request.parameter("user") ?? ""
            return .json(#"{"data":{"list":[{"id":"1","who":"\#(who)"},{"id":"2","who":"\#(who)"}]}}"#)
        }) { server in
            let yaml = """
                version: 1
                defaults:
                  records: data.list
                  id: id
                jobs:
                  - name: alice
                    url: "BASE/feed?user=${ALICE}"
                    account: "${ALICE}"
                    table: t_item
                  - name: bob
                    url: "BASE/feed?user=bob"
                    account: bob
                    table: t_item
                """
            _ = try await harness.run(yaml, server: server, environment: ["ALICE": "alice"])
        }
        #expect(try harness.ids(account: "alice") == ["1", "2"])
        #expect(try harness.ids(account: "bob") == ["1", "2"])
        #expect(try harness.record("1", account: "bob") == #"{"id":"1","who":"bob"}"#)
    }

    @Test("on_change replace updates a changed record; keep leaves the first version")
    func onChange() async throws {
        for (mode, expected) in [("replace", #"{"id":"1","v":2}"#), ("keep", #"{"id":"1","v":1}"#)] {
            let harness = try Harness()
            let version = SharedCounter()
            try await FixtureServer.with({ _ in
                .json(#"{"data":{"list":[{"id":"1","v":\#(version.value + 1)},{"id":"2"}]}}"#)
            }) { server in
                _ = try await harness.run(itemsJob("on_change: \(mode)", url: "BASE/all"), server: server)
                version.increment()
                let summary = try await harness.run(itemsJob("on_change: \(mode)", url: "BASE/all"), server: server)
                let counts = summary.jobs[0].records
                #expect((counts.new, counts.updated, counts.unchanged) == (0, mode == "replace" ? 1 : 0, mode == "replace" ? 1 : 2))
            }
            #expect(try harness.record("1") == expected)
        }
    }

    @Test("prune deletes records a complete walk no longer saw, for its account only")
    func prune() async throws {
        let harness = try Harness()
        let round = SharedCounter()
        try await FixtureServer.with({ _ in
            .json(round.value == 0 ? #"{"data":{"list":[{"id":"1"},{"id":"2"},{"id":"3"}]}}"# : #"{"data":{"list":[{"id":"2"}]}}"#)
        }) { server in
            _ = try await harness.run(itemsJob("prune: true", url: "BASE/all"), server: server)
            round.increment()
            // A capped walk does not prune.
            let capped = try await harness.run(itemsJob("prune: true\npages: { from: 1 }", url: "BASE/all?p={page}"), server: server, maxPages: 1)
            #expect(capped.jobs[0].records.pruned == 0)
            #expect(try Set(harness.ids()) == ["1", "2", "3"])
            let summary = try await harness.run(itemsJob("prune: true", url: "BASE/all"), server: server)
            #expect(summary.jobs[0].records.pruned == 2)
        }
        #expect(try harness.ids() == ["2"])
    }

    @Test("a record without a usable id is rejected; the rest of its page is stored")
    func rejectedRecords() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ _ in
            .json(#"{"data":{"list":[{"id":"1"},{"name":"x"},{"id":null},{"id":""},{"id":"2"}]}}"#)
        }) { server in
            try await harness.run(itemsJob("", url: "BASE/all"), server: server)
        }
        #expect(try harness.ids() == ["1", "2"])
        #expect(summary.jobs[0].rejected.map(\.reason) == [
            "record 1 has no usable id at 'id' (found nothing)",
            "record 2 has no usable id at 'id' (found null)",
            "record 3 has no usable id at 'id' (found string)",
        ])
        #expect(summary.jobs[0].rejected.map { "\($0.page): \($0.reason)" }.contains("1: record 1 has no usable id at 'id' (found nothing)"))
    }

    @Test("POST sends the body template with the page number filled in")
    func postBody() async throws {
        let harness = try Harness()
        try await FixtureServer.with({ request in
            let body = String(decoding: request.body, as: UTF8.self)
            let page = body.contains(#""page":1,"#) ? 1 : 2
            return .json(threePages.body(page: page))
        }) { server in
            let yaml = itemsJob("""
                method: POST
                body: { page: "{page}", size: 3, filter: "p{page}", token: "${TOKEN}" }
                pages: { from: 1, to: 2 }
                """, url: "BASE/search")
            _ = try await harness.run(yaml, server: server, environment: ["TOKEN": "s3cr\"t"])
            #expect(server.requests.map { String(decoding: $0.body, as: UTF8.self) }.sorted() == [
                #"{"page":1,"size":3,"filter":"p1","token":"s3cr\"t"}"#,
                #"{"page":2,"size":3,"filter":"p2","token":"s3cr\"t"}"#,
            ])
            #expect(server.requests.map(\.method) == ["POST", "POST"])
            // One URL, two pages: each has its own row, keyed by its body with the secret masked.
            let rows = try await harness.database("t_item.sqlite").read { db in
                try Row.fetchAll(db, sql: "SELECT url, body, ids FROM _mirror_pages ORDER BY page").map { [$0["url"], $0["body"], $0["ids"]] as [String] }
            }
            #expect(rows == [
                [server.base + "/search", #"{"page":1,"size":3,"filter":"p1","token":"REDACTED"}"#, #"["1","2","3"]"#],
                [server.base + "/search", #"{"page":2,"size":3,"filter":"p2","token":"REDACTED"}"#, #"["4","5"]"#],
            ])
            #expect(server.requests[0].headers["content-type"] == "application/json")
        }
        #expect(try harness.ids() == ["1", "2", "3", "4", "5"])
    }

    @Test("headers are sent with every request")
    func headers() async throws {
        let harness = try Harness()
        try await FixtureServer.with({ _ in .json(#"{"data":{"list":[]}}"#) }) { server in
            let yaml = """
                version: 1
                defaults:
                  headers: { User-Agent: "mirror-test/1", X-Team: base }
                jobs:
                  - name: items
                    url: "BASE/all"
                    headers: { Authorization: "Bearer ${KEY}", X-Team: mobile }
                    records: data.list
                    id: id
                    table: t_item
                """
            _ = try await harness.run(yaml, server: server, environment: ["KEY": "k1"])
            let headers = try #require(server.requests.first?.headers)
            #expect(headers["user-agent"] == "mirror-test/1")
            #expect(headers["authorization"] == "Bearer k1")
            #expect(headers["x-team"] == "mobile")
        }
    }
}
