import Foundation
@testable import MirrorJSON
@testable import MirrorModel
@testable import MirrorStore
@testable import MirrorExport
import MirrorTestSupport
import Testing

/// A fixed set of records in two accounts: acc1 has pages 1 and 2, acc2 page 2 alone.
private func stored() async throws -> Stored {
    let stored = try Stored()
    let pages: [[(id: String, json: String)]] = [
        [("9", #"{"id":"9","n":1,"tags":["a","b"]}"#), ("10", #"{"id":"10","n":2,"note":"x, \"y\""}"#),
         ("1234567890123456789012", #"{"id":"1234567890123456789012","n":3}"#)],
        [("abc", #"{"id":"abc","n":4,"obj":{"k":null}}"#), ("100", #"{"id":"100","n":5.50}"#)],
    ]
    try await stored.store(pages, account: "acc1")
    try await stored.store([pages[1]], account: "acc2", firstPage: 2)
    return stored
}

@Suite("export", .timeLimit(.minutes(6)))
struct ExporterTests {
    @Test("a change's sequence number is written as JSON writes an integer")
    func decimalDigits() {
        for value in [0, 7, 10, 95_005, 1_000_000_007, Int.max, -3, Int.min] {
            var out: [UInt8] = Array("x".utf8)
            ChangeExporter.appendDecimal(value, to: &out)
            #expect(String(decoding: out, as: UTF8.self) == "x\(value)")
        }
    }

    @Test("NDJSON is one stored record per line, walk order, accounts in turn")
    func ndjson() async throws {
        let harness = try await stored()
        #expect(try harness.export(.init(table: "t_item")) == """
            {"id":"9","n":1,"tags":["a","b"]}
            {"id":"10","n":2,"note":"x, \\"y\\""}
            {"id":"1234567890123456789012","n":3}
            {"id":"abc","n":4,"obj":{"k":null}}
            {"id":"100","n":5.50}
            {"id":"abc","n":4,"obj":{"k":null}}
            {"id":"100","n":5.50}

            """)
    }

    @Test("--format json is an array of the same objects")
    func json() async throws {
        let harness = try await stored()
        var options = Exporter.Options(table: "t_item")
        options.format = .json
        options.selection.account = "acc2"
        #expect(try harness.export(options) == "[\n{\"id\":\"abc\",\"n\":4,\"obj\":{\"k\":null}},\n{\"id\":\"100\",\"n\":5.50}\n]\n")
        options.selection.account = "nobody"
        #expect(try harness.export(options) == "[]\n")
    }

    @Test("--format csv has account, id, then every top-level field; nested values as JSON")
    func csv() async throws {
        let harness = try await stored()
        var options = Exporter.Options(table: "t_item")
        options.format = .csv
        options.selection.account = "acc1"
        #expect(try harness.export(options) == [
            "account,_id,id,n,tags,note,obj",
            #"acc1,9,9,1,"[""a"",""b""]",,"#,
            #"acc1,10,10,2,,"x, ""y""","#,
            "acc1,1234567890123456789012,1234567890123456789012,3,,,",
            #"acc1,abc,abc,4,,,"{""k"":null}""#,
            "acc1,100,100,5.50,,,",
            "",
        ].joined(separator: "\r\n"))
    }

    @Test("csv column names are unique without case: mirror's account and id columns give way to the record's fields")
    func csvUniqueNames() async throws {
        let harness = try Stored()
        try await harness.store([[("7", #"{"id":7,"_ID":"x","Account":"a","name":"n"}"#), ("8", #"{"id":8,"__id":true}"#)]])
        var options = Exporter.Options(table: "t_item")
        options.format = .csv
        #expect(try harness.export(options) == [
            "_account,___id,id,_ID,Account,name,__id",
            ",7,7,x,a,n,",
            ",8,8,,,,true",
            "",
        ].joined(separator: "\r\n"))
    }

    @Test("--since-id and --max-id compare integers as integers, other ids as text")
    func idRange() async throws {
        let harness = try await stored()
        var options = Exporter.Options(table: "t_item")
        options.selection.account = "acc1"
        options.selection.order = .id
        #expect(try ids(harness.export(options)) == ["abc", "1234567890123456789012", "100", "10", "9"])
        options.selection.sinceID = "9"
        #expect(try ids(harness.export(options)) == ["abc", "1234567890123456789012", "100", "10"])
        options.selection.maxID = "100"
        #expect(try ids(harness.export(options)) == ["100", "10"])
        options.selection.sinceID = nil
        options.selection.maxID = "ab"
        // "ab" is not an integer: every id compares as text against it.
        #expect(try ids(harness.export(options)) == ["1234567890123456789012", "100", "10", "9"])
    }

    @Test("--limit and --offset page through the walk order")
    func limitOffset() async throws {
        let harness = try await stored()
        var options = Exporter.Options(table: "t_item")
        options.selection.account = "acc1"
        options.selection.limit = 2
        options.selection.offset = 1
        #expect(try ids(harness.export(options)) == ["10", "1234567890123456789012"])
        options.selection.limit = nil
        options.selection.offset = 4
        #expect(try ids(harness.export(options)) == ["100"])
    }

    @Test("an unknown table is a clear error")
    func unknownTable() async throws {
        let harness = try await stored()
        #expect(throws: RecordReader.Failure.self) { try harness.export(.init(table: "t_nope")) }
        do {
            _ = try RecordReader.locate(table: "t_nope", in: harness.output)
        } catch {
            #expect(error.description == "no table 't_nope' in '\(harness.output)'; its tables: t_item")
        }
    }

    @Test("a table is found in any database of the output folder, whatever its file's name; an empty folder says to run first")
    func anyDatabase() async throws {
        let harness = try Stored()
        try await harness.store([[("1", #"{"id":"1"}"#)]], database: "items.db")
        #expect(try RecordReader.locate(table: "t_item", in: harness.output) == harness.output + "/items.db")
        #expect(try harness.export(.init(table: "t_item")) == #"{"id":"1"}"# + "\n")
        let empty = harness.folder + "/empty"
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        try Data("not a database".utf8).write(to: URL(fileURLWithPath: empty + "/notes.sqlite"))
        do {
            _ = try RecordReader.locate(table: "t_item", in: empty)
            Issue.record("found a table in an empty folder")
        } catch {
            #expect(error.description == "no table 't_item': '\(empty)' holds no records yet: run `mirror run` first, "
                + "or name the folder with --output")
        }
    }

    @Test("export --since-id compares ids as bytes")
    func sinceIDBytes() async throws {
        let harness = try Stored()
        // NFC `café`, NFD `café`, `Å` (U+00C5) and the Ångström sign (U+212B).
        let escaped = [#"caf\u00e9"#, #"cafe\u0301"#, #"\u00c5"#, #"\u212b"#]
        try await harness.store([zip(["caf\u{e9}", "cafe\u{301}", "\u{c5}", "\u{212b}"], escaped).map { id, text in
            (id, #"{"id":"\#(text)"}"#)
        }])
        // NFD 'café' is 63 61 66 65 CC 81: NFC 'café' (…66 C3 A9), 'Å' (C3 85) and the
        // Ångström sign (E2 84 AB) are greater byte for byte; only itself is not.
        var since = Exporter.Options(table: "t_item")
        since.selection.sinceID = "cafe\u{301}"
        #expect(try harness.export(since) == [#"caf\u00e9"#, #"\u00c5"#, #"\u212b"#].map { #"{"id":"\#($0)"}"# + "\n" }.joined())
        var upTo = Exporter.Options(table: "t_item")
        upTo.selection.maxID = "cafe\u{301}"
        #expect(try harness.export(upTo) == #"{"id":"cafe\u0301"}"# + "\n")
    }

    private func ids(_ ndjson: String) throws -> [String] {
        try ndjson.split(separator: "\n").map { line in
            let document = try JSONDocument(parsing: Array(line.utf8))
            return try #require(document.root["id"]?.stringValue)
        }
    }
}
