import Foundation
import GRDB
@testable import MirrorCore
@testable import MirrorJSON
@testable import MirrorModel
@testable import MirrorStore
import MirrorTestSupport
import Testing

/// `mirror infer`: a job's stored records, read from real SQLite files, give a `columns:`
/// block, and an `explode:` block for their lists, that the job file takes back.
@Suite("infer columns", .timeLimit(.minutes(6)))
struct InferTests {
    private static let records = [
        [#"{"id":"1","venue":{"city":"Oslo","geo":{"lat":59.9,"lon":10}},"code":7,"price":12,"starts":"2024-05-01T18:00:00Z","#
            + #""live":true,"tags":["a","b"],"big":12345678901234567890,"a b":"x","ID":"A-1","position":1,"serial":100,"stats":{"2024":5}}"#,
         #"{"id":"2","venue":{"city":"Bergen","geo":{"lat":60.4,"lon":5.3}},"code":"B7","price":7.5,"#
            + #""starts":"2024-05-02T09:30:15.250+02:00","live":false,"tags":[],"big":1,"a b":"y","ID":"A-2","position":1,"serial":101}"#],
        [#"{"id":"3","venue":{"city":"Oslo"},"code":9,"price":30,"starts":"2024-06-10T20:00Z","live":true,"tags":["c"],"#
            + #""big":12345678901234567890,"ID":"A-3","position":2,"serial":102,"note":null}"#],
    ]

    private static let allThree = """
        # columns inferred from 3 records of job 'items' (table 't_item'); paths in order of first appearance
        columns:
          # id: string 3; present in 100% of 3 records; looks like an id (a different value in every record); the record's id (the job's 'id'): not proposed
          # venue.city: string 3; present in 100% of 3 records
          venue_city: {path: venue.city, type: text}
          # venue.geo.lat: real 2; present in 66.7% of 3 records
          venue_geo_lat: {path: venue.geo.lat, type: real}
          # venue.geo.lon: integer 1, real 1; present in 66.7% of 3 records
          venue_geo_lon: {path: venue.geo.lon, type: real}
          # code: string 1, integer 2; present in 100% of 3 records; mixed types: no type (the value as the record has it)
          code: code
          # price: integer 2, real 1; present in 100% of 3 records
          price: {path: price, type: real}
          # starts: string 3; present in 100% of 3 records; looks like a time
          starts: {path: starts, type: time}
          # live: boolean 3; present in 100% of 3 records
          live: {path: live, type: boolean}
          # tags: array 3; present in 100% of 3 records; a list: proposed under 'explode:' below
          # big: integer 3; present in 100% of 3 records; 2 past 64 bits (the column keeps the digits, as text)
          big: {path: big, type: integer}
          # a b: string 2; present in 66.7% of 3 records
          a_b: {path: "a b", type: text}
          # ID: string 3; present in 100% of 3 records; looks like an id (a different value in every record)
          ID_2: {path: ID, type: text}
          # position: integer 3; present in 100% of 3 records
          position_2: {path: position, type: integer}
          # serial: integer 3; present in 100% of 3 records; looks like an id (a different value in every record)
          serial: {path: serial, type: integer}
          # stats.2024: integer 1; present in 33.3% of 3 records; the key '2024' would read as an array index: not proposed
          # note: null 1; present in 33.3% of 3 records; only null: no type
          note: note
        explode:
          # tags: array 3; present in 100% of 3 records
          tags: tags
        """

    private func infer(_ harness: Harness, sample: Int? = nil) throws -> String {
        let job = try harness.load(itemsJob(url: "http://127.0.0.1:1/items?page={page}")).jobs[0]
        return try ColumnInference.infer(job: job, folder: harness.output, sample: sample)
    }

    @Test("records of mixed shapes give this block, and the block pasted under the job makes columns and a list view of the expected values")
    func pasteable() async throws {
        let harness = try Harness()
        let api = EditableAPI(Self.records)
        try await FixtureServer.with(api.handler) { server in
            let first = try await harness.run(itemsJob(), server: server)
            #expect(first.jobs[0].error == nil)
            let block = try infer(harness)
            #expect(block == Self.allThree)
            let second = try await harness.run(itemsJob(block), server: server)
            #expect(second.jobs[0].error == nil)
        }
        #expect(try harness.ids() == ["1", "2", "3"])
        #expect(try harness.typedRows("""
            SELECT id, venue_city, venue_geo_lat, venue_geo_lon, code, price, starts, live, big, a_b, ID_2, position_2, serial, note
            FROM t_item ORDER BY id
            """) == [
            ["text:1", "text:Oslo", "real:59.9", "real:10.0", "integer:7", "real:12.0", "text:2024-05-01T18:00:00Z", "integer:1",
             "text:12345678901234567890", "text:x", "text:A-1", "integer:1", "integer:100", "null"],
            ["text:2", "text:Bergen", "real:60.4", "real:5.3", "text:B7", "real:7.5", "text:2024-05-02T09:30:15.250+02:00", "integer:0",
             "integer:1", "text:y", "text:A-2", "integer:1", "integer:101", "null"],
            ["text:3", "text:Oslo", "null", "null", "integer:9", "real:30.0", "text:2024-06-10T20:00Z", "integer:1",
             "text:12345678901234567890", "null", "text:A-3", "integer:2", "integer:102", "null"],
        ])
        #expect(try harness.typedRows("SELECT parent_id, idx, element FROM t_item__tags ORDER BY parent_id, idx") == [
            ["text:1", "integer:0", "text:a"], ["text:1", "integer:1", "text:b"], ["text:3", "integer:0", "text:c"],
        ])
        // The block says the same of the records once they have columns.
        #expect(try infer(harness) == Self.allThree)
    }

    @Test("--sample 2 reads the first two records in walk order, and every count says so")
    func sample() async throws {
        let harness = try Harness()
        try await FixtureServer.with(EditableAPI(Self.records).handler) { server in
            _ = try await harness.run(itemsJob(), server: server)
        }
        #expect(try infer(harness, sample: 2) == """
            # columns inferred from the first 2 records (--sample 2) of job 'items' (table 't_item'); paths in order of first appearance
            columns:
              # id: string 2; present in 100% of 2 records; looks like an id (a different value in every record); the record's id (the job's 'id'): not proposed
              # venue.city: string 2; present in 100% of 2 records; looks like an id (a different value in every record)
              venue_city: {path: venue.city, type: text}
              # venue.geo.lat: real 2; present in 100% of 2 records
              venue_geo_lat: {path: venue.geo.lat, type: real}
              # venue.geo.lon: integer 1, real 1; present in 100% of 2 records
              venue_geo_lon: {path: venue.geo.lon, type: real}
              # code: string 1, integer 1; present in 100% of 2 records; mixed types: no type (the value as the record has it)
              code: code
              # price: integer 1, real 1; present in 100% of 2 records
              price: {path: price, type: real}
              # starts: string 2; present in 100% of 2 records; looks like a time
              starts: {path: starts, type: time}
              # live: boolean 2; present in 100% of 2 records
              live: {path: live, type: boolean}
              # tags: array 2; present in 100% of 2 records; a list: proposed under 'explode:' below
              # big: integer 2; present in 100% of 2 records; looks like an id (a different value in every record); 1 past 64 bits (the column keeps the digits, as text)
              big: {path: big, type: integer}
              # a b: string 2; present in 100% of 2 records; looks like an id (a different value in every record)
              a_b: {path: "a b", type: text}
              # ID: string 2; present in 100% of 2 records; looks like an id (a different value in every record)
              ID_2: {path: ID, type: text}
              # position: integer 2; present in 100% of 2 records
              position_2: {path: position, type: integer}
              # serial: integer 2; present in 100% of 2 records; looks like an id (a different value in every record)
              serial: {path: serial, type: integer}
              # stats.2024: integer 1; present in 50.0% of 2 records; the key '2024' would read as an array index: not proposed
            explode:
              # tags: array 2; present in 100% of 2 records
              tags: tags
            """)
        #expect(try infer(harness, sample: 1).hasPrefix("# columns inferred from the first record (--sample 1) of job"))
    }

    @Test("--job: needed with several jobs, a misspelt one gets a suggestion")
    func jobChoice() throws {
        let harness = try Harness()
        let file = try harness.load("""
            version: 1
            jobs:
              - { name: items, url: "http://127.0.0.1:1/a", records: ., id: id, table: t_item }
              - { name: users, url: "http://127.0.0.1:1/b", records: ., id: id, table: t_user }
            """)
        let path = harness.folder + "/jobs.yaml"
        #expect(#expect(throws: UsageError.self) { try ColumnInference.job(nil, in: file) }?.description
            == "\(path) has 2 jobs: name one with --job (items, users)")
        #expect(#expect(throws: UsageError.self) { try ColumnInference.job("itmes", in: file) }?.description
            == "no job named 'itmes' in \(path) (did you mean 'items'?)")
        #expect(#expect(throws: UsageError.self) { try ColumnInference.job("orders", in: file) }?.description
            == "no job named 'orders' in \(path)")
        #expect(try ColumnInference.job("users", in: file).table == "t_user")
        let one = try harness.load(itemsJob(url: "http://127.0.0.1:1/items"))
        #expect(try ColumnInference.job(nil, in: one).name == "items")
    }

    @Test("no output folder, or a table never walked: the message names the job and the folder")
    func nothingStored() throws {
        let harness = try Harness()
        let job = try harness.load(itemsJob(url: "http://127.0.0.1:1/items")).jobs[0]
        #expect(#expect(throws: RecordReader.Failure.self) { try ColumnInference.infer(job: job, folder: harness.output) }?.description
            == "job 'items': no output folder '\(harness.output)': run `mirror run` first, or name the folder with --output")
        try FileManager.default.createDirectory(atPath: harness.output, withIntermediateDirectories: true)
        #expect(#expect(throws: RecordReader.Failure.self) { try ColumnInference.infer(job: job, folder: harness.output) }?.description
            == "job 'items' has stored nothing in '\(harness.output)': no table 't_item' in 't_item.sqlite'; "
            + "run `mirror run` first, or name the folder with --output")
    }

    @Test("column names: keys joined by _, made identifiers, never a table column's, unique without case")
    func names() {
        var taken = Set(RecordColumn.tableColumns)
        let names = [["venue", "city"], ["Venue", "City"], ["2fa"], ["a b", "c.d"], ["Position"], ["id"], ["ID"], ["é"], [""]]
            .map { ColumnInference.columnName($0, taken: &taken) }
        #expect(names == ["venue_city", "Venue_City_2", "_2fa", "a_b_c_d", "Position_2", "id_2", "ID_3", "_", "__2"])
        #expect(ColumnInference.pathText(["a b", "c.d"]) == "/a b/c.d")
        #expect(ColumnInference.pathText(["a~b", "c/d"]) == "a~b.c/d")
        #expect(ColumnInference.pathText(["/x", "y"]) == "/~1x/y")
        #expect(ColumnInference.pathText(["*"]) == "/*")
        #expect(ColumnInference.pathText(["${HOME}"]) == nil)
        #expect(ColumnInference.yaml("venue.city") == "venue.city")
        #expect(ColumnInference.yaml("/a b/c.d") == #""/a b/c.d""#)
        #expect(ColumnInference.yaml("on") == #""on""#)
        #expect(ColumnInference.yaml("2fa") == #""2fa""#)
        #expect(grouped(95005) == "95,005")
        #expect(grouped(999) == "999")
        #expect(grouped(1_000_000) == "1,000,000")
    }

    @Test("at most 200 columns: the paths after them are counted in one comment")
    func limit() throws {
        let harness = try Harness()
        let job = try harness.load(itemsJob(url: "http://127.0.0.1:1/items")).jobs[0]
        var inference = ColumnInference()
        let record = "{" + (1 ... 203).map { #""k\#($0)":\#($0)"# }.joined(separator: ",") + "}"
        inference.add(try JSONDocument(parsing: Array(record.utf8)).root)
        let lines = inference.text(job: job, sample: nil).components(separatedBy: "\n")
        #expect(lines.count == 2 + 200 * 2 + 1)
        #expect(Array(lines[400...]) == ["  # k200: integer 1; present in 100% of 1 record", "  k200: {path: k200, type: integer}",
                                       "  # and 3 more paths, not proposed: at most 200 columns are"])
    }
}
