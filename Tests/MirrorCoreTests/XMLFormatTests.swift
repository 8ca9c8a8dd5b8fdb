import Foundation
@testable import MirrorModel
import MirrorTestSupport
import Testing

/// A job of `format: xml` at `url`, its records at `records`, ids at `id`, in `t_item`.
private func xmlJob(_ keys: String, records: String = "feed.entry", url: String = "BASE/feed") -> String {
    itemsJob("format: xml\n" + keys, url: url).replacingOccurrences(of: "    records: data.list\n", with: "    records: \(records)\n")
}

private let stored = "SELECT id, record FROM t_item ORDER BY position"

@Suite("format: xml", .timeLimit(.minutes(6)))
struct XMLFormatTests {
    @Test("an Atom-like feed of three pages followed by its next link: attributes, repeated elements, entities, CDATA, a page of one entry")
    func feedPages() async throws {
        let harness = try Harness()
        let pages = [
            "/feed": """
                <?xml version="1.0" encoding="utf-8"?>
                <!-- first page -->
                <feed xmlns="http://www.w3.org/2005/Atom" xmlns:atom="http://www.w3.org/2005/Atom">
                  <title>Items &amp; more</title>
                  <link rel="self" href="/feed"/>
                  <link rel='next' href='/feed?after=2'/>
                  <entry>
                    <id>1</id>
                    <title type="html"><![CDATA[<b>Oslo</b> & Bergen]]></title>
                    <category term="a"/>
                    <category term="b"/>
                  </entry>
                  <entry>
                    <id>2</id>
                    <title>caf&#233; &#x2603; &lt;&gt;&quot;&apos;</title>
                    <atom:updated>2026-01-02</atom:updated>
                  </entry>
                </feed>
                """,
            "/feed?after=2": """
                <feed><link rel="self" href="/feed?after=2"/><link rel="next" href="/feed?after=3"/>
                <entry><id>3</id><summary>a <em>mixed</em> text</summary></entry></feed>
                """,
            "/feed?after=3": "<feed><link rel=\"self\" href=\"/feed?after=3\"/><entry><id>4</id></entry></feed>",
        ]
        let summary = try await FixtureServer.with({ request in
            FixtureResponse(headers: [("Content-Type", "application/atom+xml")], body: Array((pages[request.target] ?? "").utf8))
        }) { server in
            let summary = try await harness.run(xmlJob("next: { url: \"feed.link[@rel=next].@href\" }\nconcurrency: 1"), server: server)
            #expect(server.requests.map(\.target) == ["/feed", "/feed?after=2", "/feed?after=3"])
            return summary
        }
        #expect(summary.jobs[0].error == nil)
        #expect(summary.jobs[0].pages.total == 3)
        #expect(try harness.typedRows(stored) == [
            ["text:1", ##"text:{"id":"1","title":{"@type":"html","#text":"<b>Oslo</b> & Bergen"},"category":[{"@term":"a"},{"@term":"b"}]}"##],
            ["text:2", #"text:{"id":"2","title":"café ☃ <>\"'","atom:updated":"2026-01-02"}"#],
            ["text:3", ##"text:{"id":"3","summary":{"em":"mixed","#text":"a  text"}}"##],
            ["text:4", #"text:{"id":"4"}"#],
        ])
        try await serving(harness) { base in
            let page = try await get(base + "/feed?after=2")
            #expect(page.status == 200 && page.headers["content-type"] == "application/json")
            #expect(page.text == #"{"feed":{"link":[{"@rel":"self","@href":"/feed?after=2"},{"@rel":"next","@href":"/feed?after=3"}],"#
                + ##""entry":[{"id":"3","summary":{"em":"mixed","#text":"a  text"}}]}}"##)
        }
    }

    @Test("a billion-laughs DOCTYPE fails its page with nothing expanded; earlier pages stay")
    func entityBomb() async throws {
        let harness = try Harness()
        let bomb = "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n <!ENTITY lol \"lol\">\n"
            + (2 ... 9).map { " <!ENTITY lol\($0) \"" + String(repeating: "&lol\($0 == 2 ? "" : String($0 - 1));", count: 10) + "\">\n" }.joined()
            + "]>\n<feed><entry><id>&lol9;</id></entry></feed>"
        let summary = try await FixtureServer.with({ request in
            let body = request.parameter("page") == "1" ? "<feed><entry><id>1</id></entry></feed>" : bomb
            return FixtureResponse(headers: [("Content-Type", "application/xml")], body: Array(body.utf8))
        }) { server in
            let summary = try await harness.run(xmlJob("concurrency: 1", url: "BASE/feed?page={page}"), server: server)
            #expect(summary.jobs[0].error == "job 'items': GET \(server.base)/feed?page=2: HTTP 200: "
                + "XML with a DOCTYPE is not read: entities are never expanded; page 2 not stored, page 1 kept")
            return summary
        }
        #expect(summary.jobs.map(\.status) == [.failed])
        #expect(try harness.ids() == ["1"])
        #expect(try harness.typedRows("SELECT page FROM _mirror_pages") == [["integer:1"]])
    }

    @Test("an external entity is never fetched: its page fails, the server never asked for it, earlier pages stay")
    func externalEntity() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            let body = switch request.parameter("page") {
            case "1": "<feed><entry><id>1</id></entry><entry><id>2</id></entry></feed>"
            case "2": "<?xml version=\"1.0\"?>\n<!DOCTYPE feed [<!ENTITY x SYSTEM \"\(request.base)/secret\">]>\n"
                + "<feed><entry><id>&x;</id></entry></feed>"
            default: "secret"
            }
            return FixtureResponse(body: Array(body.utf8))
        }) { server in
            let summary = try await harness.run(xmlJob("concurrency: 1", url: "BASE/feed?page={page}"), server: server)
            #expect(server.requests.map(\.target) == ["/feed?page=1", "/feed?page=2"])
            #expect(summary.jobs[0].error == "job 'items': GET \(server.base)/feed?page=2: HTTP 200: "
                + "XML with a DOCTYPE is not read: entities are never expanded; page 2 not stored, page 1 kept")
            return summary
        }
        #expect(summary.jobs.map(\.status) == [.failed])
        #expect(try harness.ids() == ["1", "2"])
    }

    @Test("malformed XML fails its page naming the line and column; an empty feed ends the walk")
    func malformed() async throws {
        let harness = try Harness()
        let pages = [
            1: "<feed>\n  <entry><id>1</id></entry>\n</feed>",
            2: "<feed/>",
        ]
        _ = try await FixtureServer.with({ request in
            FixtureResponse(body: Array((pages[Int(request.parameter("page") ?? "") ?? 0] ?? "").utf8))
        }) { server in
            let summary = try await harness.run(xmlJob("concurrency: 1", url: "BASE/feed?page={page}"), server: server)
            #expect(summary.jobs[0].error == nil)
            #expect(server.requests.map(\.target) == ["/feed?page=1", "/feed?page=2"])
        }
        #expect(try harness.ids() == ["1"])

        let broken = try Harness()
        try await FixtureServer.with({ _ in
            FixtureResponse(body: Array("<feed>\n  <entry>\n    <id>1</id>\n  </entri>\n</feed>".utf8))
        }) { server in
            let summary = try await broken.run(xmlJob("concurrency: 1", url: "BASE/feed?page={page}"), server: server)
            #expect(summary.jobs[0].error == "job 'items': GET \(server.base)/feed?page=1: HTTP 200: XML line 4, column 3: "
                + "end tag </entri> does not match <entry> (opened at line 2, column 3); page 1 not stored, nothing stored")
        }
    }
}
