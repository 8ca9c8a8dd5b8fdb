import Foundation
@testable import MirrorJSON
@testable import MirrorModel
@testable import MirrorStore
@testable import MirrorExport
import MirrorTestSupport
import Testing

/// Stores a fixed set of records in two accounts, then exports them.
private func stored() async throws -> Harness {
    let harness = try Harness()
    let pages = [
        #"{"data":{"list":[{"id":"9","n":1,"tags":["a","b"]},{"id":"10","n":2,"note":"x, \"y\""},{"id":"1234567890123456789012","n":3}]}}"#,
        #"{"data":{"list":[{"id":"abc","n":4,"obj":{"k":null}},{"id":"100","n":5.50}]}}"#,
    ]
    try await FixtureServer.with({ request in
        let page = Int(request.parameter("page") ?? "") ?? 0
        return .json(page >= 1 && page <= 2 ? pages[page - 1] : #"{"data":{"list":[]}}"#)
    }) { server in
        let yaml = """
            version: 1
            defaults: { records: data.list, id: id }
            jobs:
              - { name: a, url: "BASE/x?page={page}", account: acc1, table: t_item }
              - { name: b, url: "BASE/x?page={page}&b", account: acc2, pages: { from: 2, to: 2 }, table: t_item }
            """
        _ = try await harness.run(yaml, server: server)
    }
    return harness
}

@Suite("export", .timeLimit(.minutes(3)))
struct ExporterTests {
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
        let harness = try Harness()
        let page = #"{"list":[{"id":7,"_ID":"x","Account":"a","name":"n"},{"id":8,"__id":true}]}"#
        try await FixtureServer.with({ request in
            .json(request.parameter("page") == "1" ? page : #"{"list":[]}"#)
        }) { server in
            let yaml = """
                version: 1
                jobs:
                  - { name: a, url: "BASE/x?page={page}", records: list, id: id, table: t_item }
                """
            _ = try await harness.run(yaml, server: server)
        }
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
        let harness = try Harness()
        try await FixtureServer.with({ _ in .json(#"{"data":{"list":[{"id":"1"}]}}"#) }) { server in
            _ = try await harness.run(itemsJob("pages: { from: 1, to: 1 }\ndatabase: items.db"), server: server)
        }
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

    private func ids(_ ndjson: String) throws -> [String] {
        try ndjson.split(separator: "\n").map { line in
            let document = try JSONDocument(parsing: Array(line.utf8))
            return try #require(document.root["id"]?.stringValue)
        }
    }
}

@Suite("id order", .timeLimit(.minutes(3)))
struct IDOrderTests {
    @Test("integers of any length compare numerically; signs and leading zeros count")
    func integers() {
        #expect(IDOrder.compare("9", "10") == -1)
        #expect(IDOrder.compare("1234567890123456789012", "999") == 1)
        #expect(IDOrder.compare("007", "7") == 0)
        #expect(IDOrder.compare("-5", "3") == -1)
        #expect(IDOrder.compare("-50", "-6") == -1)
        #expect(IDOrder.compare("-0", "0") == 0)
        #expect(IDOrder.compare("abc", "abd") == -1)
        #expect(IDOrder.compare("9", "10a") == 1)
        #expect(IDOrder.collate("10a", "9") == 1)
    }
}
