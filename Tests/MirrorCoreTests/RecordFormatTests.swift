import Foundation
@testable import MirrorModel
import MirrorTestSupport
import Testing

/// `body` as gzip writes it, in one stored (uncompressed) deflate block: what matters to
/// the client is the coding, not how well it packs.
private func gzipped(_ body: [UInt8]) -> [UInt8] {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in body {
        crc ^= UInt32(byte)
        for _ in 0 ..< 8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    crc ^= 0xFFFF_FFFF
    func littleEndian(_ value: UInt32) -> [UInt8] { (0 ..< 4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
    let length = UInt16(body.count)
    var out: [UInt8] = [0x1F, 0x8B, 0x08, 0, 0, 0, 0, 0, 0, 0xFF]
    out += [0x01, UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8(~length >> 8)]
    out += body
    out += littleEndian(crc) + littleEndian(UInt32(body.count))
    return out
}

/// A job of `format` at `/items?page={page}`, its records' ids at `id`, in `t_item`.
private func formatJob(_ keys: String, url: String = "BASE/items?page={page}") -> String {
    itemsJob(keys, url: url).replacingOccurrences(of: "    records: data.list\n", with: "")
}

private let stored = "SELECT id, record FROM t_item ORDER BY position"

@Suite("formats that are not JSON", .timeLimit(.minutes(6)))
struct RecordFormatTests {
    @Test("ndjson paged by {page}: each line is a record (CRLF, blank lines, no final newline), an empty page ends the walk")
    func ndjsonPages() async throws {
        let harness = try Harness()
        let pages = [
            1: "{\"id\":\"a1\",\"n\":1}\r\n{\"id\":\"a2\",\"tags\":[\"x\"]}\r\n",
            2: "\n{\"id\":3, \"big\":12345678901234567890123}\n  \n{\"id\":\"a4\"}",
            3: "",
        ]
        let summary = try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            return FixtureResponse(headers: [("Content-Type", "application/x-ndjson")], body: Array((pages[page] ?? "").utf8))
        }) { server in
            let summary = try await harness.run(formatJob("format: ndjson\nconcurrency: 1"), server: server)
            #expect(server.requests.map(\.target) == ["/items?page=1", "/items?page=2", "/items?page=3"])
            return summary
        }
        #expect(summary.jobs[0].error == nil)
        #expect(summary.jobs[0].pages.total == 3)
        #expect(try harness.typedRows(stored) == [
            ["text:a1", #"text:{"id":"a1","n":1}"#],
            ["text:a2", #"text:{"id":"a2","tags":["x"]}"#],
            ["text:3", #"text:{"id":3,"big":12345678901234567890123}"#],
            ["text:a4", #"text:{"id":"a4"}"#],
        ])
        try await serving(harness) { base in
            let page = try await get(base + "/items?page=2")
            #expect(page.status == 200 && page.headers["content-type"] == "application/json")
            #expect(page.text == #"[{"id":3,"big":12345678901234567890123},{"id":"a4"}]"#)
        }
    }

    @Test("ndjson: a line that is not JSON fails its page, naming the line; earlier pages stay")
    func ndjsonBadLine() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            let body = request.parameter("page") == "1" ? "{\"id\":\"1\"}\n{\"id\":\"2\"}\n" : "{\"id\":\"3\"}\r\n\r\n{\"id\":\"4\",}\r\n"
            return FixtureResponse(body: Array(body.utf8))
        }) { server in
            let summary = try await harness.run(formatJob("format: jsonl\nconcurrency: 1"), server: server)
            #expect(summary.jobs[0].error == "job 'items': GET \(server.base)/items?page=2: HTTP 200: "
                + "line 3 is not JSON: unexpected character '}' at byte 10; page 2 not stored, page 1 kept")
            return summary
        }
        #expect(summary.jobs.map(\.status) == [.failed])
        #expect(try harness.ids() == ["1", "2"])
        #expect(try harness.typedRows("SELECT page FROM _mirror_pages") == [["integer:1"]])
    }

    @Test("ndjson: two records on one line, or one record over two lines, fail the page naming the line")
    func ndjsonLineHoldsOneRecord() async throws {
        let bodies = [
            "{\"id\":\"1\"}\n{\"id\":\"2\"}, {\"id\":\"3\"}\n": "line 2 is not JSON: extra data after the JSON value at byte 10",
            "{\"id\":\"1\"}\n{\"id\":\"2\",\n\"n\":[1,\n2]}\n": "line 2 is not JSON: unexpected end of input",
            "[{\"id\":\"1\"}\n]\n": "line 1 is not JSON: unexpected end of input",
            "{\"id\":\"1\"}\n{\"id\":\"2\"} {\"id\":\"3\"}\n": "line 2 is not JSON: extra data after the JSON value at byte 11",
        ]
        for (body, problem) in bodies {
            let harness = try Harness()
            let summary = try await FixtureServer.with({ _ in FixtureResponse(body: Array(body.utf8)) }) { server in
                let summary = try await harness.run(formatJob("format: ndjson\nconcurrency: 1"), server: server)
                #expect(summary.jobs[0].error == "job 'items': GET \(server.base)/items?page=1: HTTP 200: \(problem); page 1 not stored, nothing stored")
                return summary
            }
            #expect(summary.jobs.map(\.status) == [.failed])
            #expect(try harness.ids() == [])
        }
    }

    @Test("csv paged by a Link header: RFC 4180 quoting, a gzip body sent as text/csv, columns typing fields; served back as JSON")
    func csvLinkPages() async throws {
        let harness = try Harness()
        let page1 = "id,name,count,price,note\r\n"
            + "1,\"Oslo, Norway\",12,4.5,\"she said \"\"hi\"\"\"\r\n"
            + "2,Bergen,,,\"two\r\nlines\"\r\n"
        let page2 = "id,name,count,price,note\n3,Tromsø,123456789012345678901234567890,-0.5e3,\n4,x,seven,1.,plain"
        let summary = try await FixtureServer.with({ request in
            if request.parameter("after") == "2" {
                return FixtureResponse(headers: [("Content-Type", "text/csv"), ("Content-Encoding", "gzip")],
                                       body: gzipped(Array(page2.utf8)))
            }
            return FixtureResponse(headers: [("Content-Type", "text/csv; charset=utf-8"),
                                             ("Link", "<\(request.base)/export?after=2>; rel=\"next\"")],
                                   body: Array(page1.utf8))
        }) { server in
            let job = formatJob("format: csv\nnext: link\ncolumns:\n  count: { path: count, type: integer }\n"
                + "  price: { path: price, type: real }", url: "BASE/export")
            let summary = try await harness.run(job, server: server)
            #expect(server.requests.map(\.target) == ["/export", "/export?after=2"])
            #expect(server.requests[1].headers["accept-encoding"] == "gzip, deflate")
            return summary
        }
        #expect(summary.jobs[0].error == nil)
        #expect(try harness.typedRows(stored) == [
            ["text:1", #"text:{"id":"1","name":"Oslo, Norway","count":12,"price":4.5,"note":"she said \"hi\""}"#],
            ["text:2", #"text:{"id":"2","name":"Bergen","count":null,"price":null,"note":"two\r\nlines"}"#],
            ["text:3", #"text:{"id":"3","name":"Tromsø","count":123456789012345678901234567890,"price":-0.5e3,"note":""}"#],
            ["text:4", #"text:{"id":"4","name":"x","count":"seven","price":"1.","note":"plain"}"#],
        ])
        let typed = try harness.typedRows("SELECT count, price FROM t_item ORDER BY position")
        #expect(typed == [["integer:12", "real:4.5"], ["null", "null"], ["text:123456789012345678901234567890", "real:-500.0"], ["null", "null"]])
        try await serving(harness) { base in
            let page = try await get(base + "/export?after=2")
            #expect(page.status == 200 && page.headers["content-type"] == "application/json")
            #expect(page.text == #"[{"id":"3","name":"Tromsø","count":123456789012345678901234567890,"price":-0.5e3,"note":""},"#
                + #"{"id":"4","name":"x","count":"seven","price":"1.","note":"plain"}]"#)
        }
    }

    @Test("csv with csv.delimiter, paged by {page}: a header-only page is empty and ends the walk")
    func csvHeaderOnlyPage() async throws {
        let harness = try Harness()
        let pages = [1: "\u{FEFF}id;city\n1;Oslo\n2;\"Bergen; Vestland\"\n", 2: "id;city\r\n", 3: "id;city\n9;Bodø\n"]
        try await FixtureServer.with({ request in
            FixtureResponse(body: Array((pages[Int(request.parameter("page") ?? "") ?? 0] ?? "").utf8))
        }) { server in
            _ = try await harness.run(formatJob("format: csv\ncsv: { delimiter: \";\" }\nconcurrency: 1"), server: server)
            #expect(server.requests.map(\.target) == ["/items?page=1", "/items?page=2"])
        }
        #expect(try harness.typedRows(stored) == [
            ["text:1", #"text:{"id":"1","city":"Oslo"}"#],
            ["text:2", #"text:{"id":"2","city":"Bergen; Vestland"}"#],
        ])
    }

    @Test("csv: a ragged row fails its page, naming the row and both counts; earlier pages stay")
    func csvRaggedRow() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            let body = request.parameter("page") == "1" ? "id,city\n1,Oslo\n" : "id,city\n2,Bergen\n3,\"Tromsø\nNorway\"\n4,Bodø,extra\n"
            return FixtureResponse(headers: [("Content-Type", "text/csv")], body: Array(body.utf8))
        }) { server in
            let summary = try await harness.run(formatJob("format: csv\nconcurrency: 1"), server: server)
            #expect(summary.jobs[0].error == "job 'items': GET \(server.base)/items?page=2: HTTP 200: "
                + "CSV row 4 has 3 fields where the header (row 1) has 2; page 2 not stored, page 1 kept")
            return summary
        }
        #expect(summary.jobs.map(\.status) == [.failed])
        #expect(try harness.ids() == ["1"])
        #expect(try harness.typedRows("SELECT page FROM _mirror_pages") == [["integer:1"]])
    }
}
