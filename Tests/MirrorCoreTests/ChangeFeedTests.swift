import Foundation
import GRDB
@testable import MirrorDownload
@testable import MirrorFiles
@testable import MirrorJSON
@testable import MirrorModel
@testable import MirrorStore
@testable import MirrorExport
import MirrorTestSupport
import Synchronization
import Testing

/// A paged API whose pages the test rewrites between runs: `pages[n]` is page n + 1's
/// records, as JSON text; pages past the end are empty.
final class EditableAPI: Sendable {
    let pages: Mutex<[[String]]>

    init(_ pages: [[String]]) {
        self.pages = Mutex(pages)
    }

    func set(_ pages: [[String]]) {
        self.pages.withLock { $0 = pages }
    }

    var handler: @Sendable (FixtureRequest) async -> FixtureResponse {
        { request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            let records = self.pages.withLock { page >= 1 && page <= $0.count ? $0[page - 1] : [] }
            return .json(#"{"data":{"list":[\#(records.joined(separator: ","))]}}"#)
        }
    }
}

/// One line of `export --changes-since`, parsed.
struct FeedLine: Equatable, CustomStringConvertible {
    var seq: Int
    var op: String
    var account: String
    var id: String
    /// In a child job's table.
    var parentID: String?
    /// The record's text exactly as the line holds it.
    var record: String?

    var description: String {
        "\(seq) \(op) \(account)/\(id)\(parentID.map { "@" + $0 } ?? "")\(record.map { " " + $0 } ?? "")"
    }
}

extension Harness {
    /// The changes of `table` since `since`, as `export --changes-since` writes them, and the
    /// mark it ends at.
    func changes(since: Int, table: String = "t_item", account: String? = nil, limit: Int? = nil,
                 format: Exporter.Format = .ndjson, feed: String? = nil, localFiles: Bool = false)
        throws -> (lines: [FeedLine], through: Int, feed: String, text: String) {
        var options = ChangeExporter.Options(table: table, since: since)
        options.account = account
        options.limit = limit
        options.format = format
        options.feed = feed
        options.localFiles = localFiles
        let path = folder + "/changes-\(UUID().uuidString)"
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var sink = OutputSink(descriptor: descriptor)
        let database = try RecordReader.locate(table: table, in: output)
        let mark = try ChangeExporter(database: database, options: options).export(to: &sink)
        close(descriptor)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let lines = format == .json ? [] : text.split(separator: "\n").map { FeedLine(line: String($0)) }
        return (lines, mark.through, mark.feed, text)
    }

    /// Writes a snapshot of the output folder to `name` in the test's folder.
    @discardableResult
    func snapshot(_ name: String, tables: [String] = [], account: String? = nil, withFiles: Bool = false,
                  withPages: Bool = false, compactBefore: Int? = nil) async throws -> SnapshotWriter.Written {
        var options = SnapshotWriter.Options(output: output, destination: folder + "/" + name, mirrorVersion: "test")
        options.tables = tables
        options.account = account
        options.withFiles = withFiles
        options.withPages = withPages
        options.compactChangesBefore = compactBefore
        return try await SnapshotWriter(options: options).write()
    }

    /// `(account, id, record as JSON value)` of every row of a table of a database file.
    static func rows(_ path: String, table: String = "t_item") throws -> [[String]] {
        try DatabaseQueue(path: path).read { db in
            try Row.fetchAll(db, sql: "SELECT account, id, json(record) AS record FROM \"\(table)\" ORDER BY account, id")
                .map { [$0["account"], $0["id"], $0["record"]] }
        }
    }
}

extension FeedLine {
    /// Parses one NDJSON line of the feed, keeping the record's text as written.
    init(line: String) {
        let root = try! JSONDocument(parsing: Array(line.utf8)).root
        seq = Int(root["seq"]!.rawText)!
        op = root["op"]!.stringValue!
        account = root["account"]!.stringValue!
        id = root["id"]!.stringValue!
        parentID = root["parent_id"]?.stringValue
        record = root["record"].map(\.rawText)
    }
}

/// Runs the `sqlite3` command-line shell on `database` with `sql` in `folder`; its stdout.
@discardableResult
func sqlite3(_ database: String, _ sql: String, in folder: String) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
    process.arguments = ["-bail", database]
    process.currentDirectoryURL = URL(fileURLWithPath: folder)
    let input = Pipe(), output = Pipe(), errors = Pipe()
    process.standardInput = input
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    input.fileHandleForWriting.write(Data(sql.utf8))
    try input.fileHandleForWriting.close()
    let out = output.fileHandleForReading.readDataToEndOfFile()
    let err = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw RecordReader.Failure(description: "sqlite3 failed: \(String(decoding: err, as: UTF8.self))")
    }
    return String(decoding: out, as: UTF8.self)
}

/// What a device runs to apply `feed.json` (`export --changes-since M --format json`) to
/// its copy of `t_item`: docs/devices.md shows the same SQL.
let deviceApplySQL = """
    BEGIN;
    CREATE TEMP TABLE feed AS SELECT CAST(readfile('feed.json') AS TEXT) AS doc;
    INSERT INTO t_item (account, id, record, position, first_seen, last_seen)
    SELECT c.value ->> 'account', c.value ->> 'id', c.value -> 'record', 0,
           strftime('%Y-%m-%dT%H:%M:%fZ'), strftime('%Y-%m-%dT%H:%M:%fZ')
      FROM feed, json_each(feed.doc, '$.changes') c
     WHERE c.value ->> 'op' = 'upsert'
    ON CONFLICT (account, id) DO UPDATE SET record = excluded.record, last_seen = excluded.last_seen;
    DELETE FROM t_item WHERE (account, id) IN (
      SELECT c.value ->> 'account', c.value ->> 'id' FROM feed, json_each(feed.doc, '$.changes') c
       WHERE c.value ->> 'op' = 'delete');
    UPDATE _mirror_snapshot SET changes_through = (SELECT doc ->> 'changes_through' FROM feed) WHERE table_name = 't_item';
    COMMIT;
    """

private func item(_ id: String, _ version: Int, big: Bool = false) -> String {
    big ? #"{"id":"\#(id)","v":\#(version),"n":123456789012345678901234567890}"# : #"{"id":"\#(id)","v":\#(version)}"#
}

@Suite("the change feed", .timeLimit(.minutes(6)))
struct ChangeFeedTests {
    @Test("inserts, updates, deletes and prunes each give one line per key, in sequence order; unchanged records and 304s none")
    func feedAcrossRuns() async throws {
        let harness = try Harness()
        let api = EditableAPI([[item("a", 1), item("b", 1)], [item("c", 1, big: true)]])
        let job = itemsJob("prune: true\ndeleted: gone")
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(job, server: server)
            let first = try harness.changes(since: 0)
            #expect(first.lines.map(\.description) == [
                #"1 upsert /a {"id":"a","v":1}"#, #"2 upsert /b {"id":"b","v":1}"#,
                #"3 upsert /c {"id":"c","v":1,"n":123456789012345678901234567890}"#,
            ])
            #expect(first.through == 3)

            // The same pages again: every record is seen, none changes.
            _ = try await harness.run(job, server: server)
            #expect(try harness.changes(since: 3).lines == [])
            #expect(try harness.changes(since: 3).through == 3)

            // b changes, d is new, c is gone from the API (pruned), a is marked deleted.
            api.set([[#"{"id":"a","gone":true}"#, item("b", 2)], [item("d", 1)]])
            let third = try await harness.run(job, server: server)
            #expect(third.jobs[0].records == .init(new: 1, updated: 1, unchanged: 0, rejected: 0, pruned: 1, deleted: 1))
            let changes = try harness.changes(since: 3)
            #expect(changes.lines.map(\.description) == [
                #"4 upsert /b {"id":"b","v":2}"#, "5 delete /a", #"6 upsert /d {"id":"d","v":1}"#, "7 delete /c",
            ])
            #expect(changes.through == 7)
            // A key keeps its latest change only: from the start, a and c are deletes.
            #expect(try harness.changes(since: 0).lines.map(\.description) == [
                #"4 upsert /b {"id":"b","v":2}"#, "5 delete /a", #"6 upsert /d {"id":"d","v":1}"#, "7 delete /c",
            ])
            // A limit cuts the feed after a change: the mark is that change.
            let limited = try harness.changes(since: 3, limit: 2)
            #expect(limited.lines.map(\.seq) == [4, 5] && limited.through == 5)
            #expect(try harness.changes(since: 5).lines.map(\.seq) == [6, 7])
            #expect(try harness.changes(since: 7).lines == [])
        }
    }

    @Test("a page of more records than one insert statement takes: each new, changed and seen record counted, placed and fed once")
    func pageLargerThanOneInsert() async throws {
        let harness = try Harness()
        // 250 records, over two and a half insert statements; 0-99 are stored before, 60 then changes.
        let first = (0 ..< 100).map { item("r\($0)", 1) }
        let api = EditableAPI([first])
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(itemsJob(), server: server)
            let before = try harness.changes(since: 0)
            #expect(before.lines.map(\.id) == (0 ..< 100).map { "r\($0)" })
            api.set([(50 ..< 300).map { item("r\($0)", $0 == 60 ? 2 : 1) }])
            let second = try await harness.run(itemsJob(), server: server)
            #expect(second.jobs[0].records == .init(new: 200, updated: 1, unchanged: 49, rejected: 0, pruned: 0, deleted: 0))
            #expect(try harness.ids().count == 300)
            // The page's records from position 0; those it no longer lists keep theirs.
            let stored = try await harness.database("t_item.sqlite").read { db in
                try Row.fetchAll(db, sql: "SELECT id, position, record FROM t_item WHERE id IN ('r50', 'r60', 'r299', 'r0')")
                    .map { "\($0["id"] as String) \($0["position"] as Int) \($0["record"] as String)" }
            }
            #expect(Set(stored) == [
                #"r50 0 {"id":"r50","v":1}"#, #"r60 10 {"id":"r60","v":2}"#, #"r299 249 {"id":"r299","v":1}"#,
                #"r0 0 {"id":"r0","v":1}"#,
            ])
            // One change per new or changed record, none for those seen again: the new ones in page order.
            let changes = try harness.changes(since: before.through)
            #expect(changes.lines.count == 201)
            #expect(changes.lines.map(\.seq) == Array(before.through + 1 ... before.through + 201))
            #expect(changes.lines.filter { $0.id != "r60" }.map(\.id) == (100 ..< 300).map { "r\($0)" })
            #expect(changes.lines.allSatisfy { $0.op == "upsert" })
            #expect(changes.lines.first { $0.id == "r60" }?.record == #"{"id":"r60","v":2}"#)
        }
    }

    @Test("pages answered 304 change nothing and add nothing to the feed")
    func notModifiedAddsNothing() async throws {
        let harness = try Harness()
        let api = ConditionalAPI([
            "": .init(ids: ["1", "2"], next: "B", version: 1),
            "B": .init(ids: ["3"], next: nil, version: 1),
        ])
        let job = cursorJob
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(job, server: server)
            #expect(try harness.changes(since: 0).through == 3)
            let second = try await harness.run(job, server: server)
            #expect(second.jobs[0].pages.notModified == 2)
            #expect(try harness.changes(since: 3).lines == [])
            #expect(try harness.changes(since: 0).through == 3)
            api.change("B") { $0.ids = ["3", "4"]; $0.version = 2 }
            _ = try await harness.run(job, server: server)
            // Within a page, its new records come first, then those it changed.
            #expect(try harness.changes(since: 3).lines.map(\.description) == [
                #"4 upsert /4 {"id":"4","v":2}"#, #"5 upsert /3 {"id":"3","v":2}"#,
            ])
        }
    }

    @Test("a device that applies the feed to its snapshot with sqlite3 alone ends with the mirror's rows")
    func deviceCatchesUp() async throws {
        let harness = try Harness()
        let api = EditableAPI([[item("1", 1), item("2", 1, big: true)], [item("3", 1), item("4", 1)]])
        let job = itemsJob("prune: true\ndeleted: gone")
        let device = harness.folder + "/device"
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(job, server: server)
            let snapshot = try await harness.snapshot("snap")
            #expect(snapshot.manifest.databases.map(\.changesThrough) == [4])
            try FileManager.default.copyItem(atPath: harness.folder + "/snap", toPath: device)
            // Three runs: inserts and updates, a prune, a deletion and a record back again.
            api.set([[item("1", 2), item("2", 1, big: true)], [item("3", 1), item("4", 1), item("5", 1)]])
            _ = try await harness.run(job, server: server)
            api.set([[item("1", 2), item("5", 2)], [item("6", 1, big: true)]])
            _ = try await harness.run(job, server: server)
            api.set([[item("1", 3), #"{"id":"5","gone":1}"#], [item("6", 1, big: true), item("2", 9)]])
            _ = try await harness.run(job, server: server)
        }
        let mark = try Int(sqlite3("t_item.sqlite", "SELECT changes_through FROM _mirror_snapshot;", in: device)
            .trimmingCharacters(in: .whitespacesAndNewlines))!
        #expect(mark == 4)
        let feedID = try sqlite3("t_item.sqlite", "SELECT feed FROM _mirror_snapshot;", in: device)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(feedID.count == 16)
        let feed = try harness.changes(since: mark, format: .json, feed: feedID)
        #expect(feed.feed == feedID)
        // A mark of another feed (a database made again since) is refused.
        let other = #expect(throws: ChangeFeed.Unreachable.self) { try harness.changes(since: mark, feed: "0123456789abcdef") }
        #expect(other?.description == "the change feed of 't_item' is feed \(feedID), not the one that mark came from: "
            + "the database was made again since; take a new snapshot")
        try feed.text.write(toFile: device + "/feed.json", atomically: true, encoding: .utf8)
        try sqlite3("t_item.sqlite", deviceApplySQL, in: device)
        let mirrored = try Harness.rows(harness.output + "/t_item.sqlite")
        #expect(mirrored.map { $0[1] } == ["1", "2", "6"])
        #expect(try Harness.rows(device + "/t_item.sqlite") == mirrored)
        // Big numbers arrive digit for digit.
        #expect(try sqlite3("t_item.sqlite", "SELECT record FROM t_item WHERE id = '6';", in: device)
            == #"{"id":"6","v":1,"n":123456789012345678901234567890}"# + "\n")
        #expect(try sqlite3("t_item.sqlite", "SELECT changes_through FROM _mirror_snapshot;", in: device)
            == "\(feed.through)\n")
        // Applying the next feed, empty, changes nothing.
        let next = try harness.changes(since: feed.through, format: .json)
        #expect(next.text == "{\"changes\":[],\n\"feed\":\"\(feed.feed)\",\"changes_through\":\(feed.through)}\n")
    }

    @Test("compaction keeps a device ahead of its point working and tells one behind it to take a new snapshot")
    func compaction() async throws {
        let harness = try Harness()
        let api = EditableAPI([[item("1", 1), item("2", 1), item("3", 1)]])
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(itemsJob(), server: server)
            api.set([[item("1", 2), item("2", 2), item("3", 1), item("4", 1)]])
            _ = try await harness.run(itemsJob(), server: server)
        }
        // Changes now: 3 upsert /3, 4 upsert /1, 5 upsert /2, 6 upsert /4.
        #expect(try harness.changes(since: 0).lines.map(\.seq) == [3, 4, 5, 6])
        let past = await #expect(throws: SnapshotWriter.Failure.self) { try await harness.snapshot("past", compactBefore: 8) }
        #expect(past?.description == "--compact-changes-before 8 is past the last change this snapshot holds (6): a device "
            + "given it could not catch up; at most 7")
        #expect(!FileManager.default.fileExists(atPath: harness.folder + "/past"))
        #expect(!FileManager.default.fileExists(atPath: harness.folder + "/past.partial"))
        try await harness.snapshot("snap", compactBefore: 5)
        #expect(try harness.changes(since: 4).lines.map(\.seq) == [5, 6])
        #expect(try harness.changes(since: 6).lines == [])
        let behind = #expect(throws: ChangeFeed.Unreachable.self) { try harness.changes(since: 3) }
        #expect(behind?.description == "the change feed of 't_item' was compacted through seq 4: the changes since 3 "
            + "are gone; take a new snapshot")
        let ahead = #expect(throws: ChangeFeed.Unreachable.self) { try harness.changes(since: 9) }
        #expect(ahead?.description == "the change feed of 't_item' ends at seq 6, before 9: the database was made "
            + "again since that mark was taken; take a new snapshot")
        // The feed survives the store being opened again, and goes on from where it was.
        try await FixtureServer.with(EditableAPI([[item("1", 3)]]).handler) { server in
            _ = try await harness.run(itemsJob(), server: server)
        }
        #expect(try harness.changes(since: 6).lines.map(\.description) == [#"7 upsert /1 {"id":"1","v":3}"#])
    }

    @Test("records stored before the feed existed are its first changes, in walk order")
    func upgradeSeedsTheFeed() async throws {
        let harness = try Harness()
        try FileManager.default.createDirectory(atPath: harness.output, withIntermediateDirectories: true)
        let path = harness.output + "/t_item.sqlite"
        let old = try DatabaseQueue(path: path)
        try await old.write { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            for migration in StoreSchema.migrations.prefix(9) { try migration.apply(db) }
            try db.execute(sql: "PRAGMA user_version = 9")
            try db.execute(sql: StoreSchema.createTable("t_item"))
            for (position, id) in ["b", "a", "c"].enumerated() {
                try db.execute(sql: """
                    INSERT INTO t_item (account, id, record, position, first_seen, last_seen) VALUES ('', ?, ?, ?, 'x', 'x')
                    """, arguments: [id, #"{"id":"\#(id)"}"#, position])
            }
        }
        try old.close()
        _ = try TableStore(path: path)
        #expect(try harness.changes(since: 0).lines.map(\.description) == [
            #"1 upsert /b {"id":"b"}"#, #"2 upsert /a {"id":"a"}"#, #"3 upsert /c {"id":"c"}"#,
        ])
    }

    @Test("changes that later ones supersede are dropped once they are most of the feed; every mark reads the same")
    func supersededDropped() async throws {
        let harness = try Harness()
        let ids = (1...10).map(String.init)
        let api = EditableAPI([ids.map { item($0, 1) }])
        var marks: [Int] = []
        func feedRows() throws -> Int {
            try harness.database("t_item.sqlite").read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM _mirror_changes")! }
        }
        try await FixtureServer.with(api.handler) { server in
            for version in 1...9 {
                api.set([ids.map { item($0, version) }])
                _ = try await harness.run(itemsJob(), server: server)
                marks.append(try harness.changes(since: 0).through)
                // 10 rows a run, until more than 2 x 10 + 64 of them: then only each key's latest.
                #expect(try feedRows() == (version < 9 ? 10 * version : 10))
            }
        }
        #expect(marks == (1...9).map { 10 * $0 })
        let latest = ids.enumerated().map { index, id in "\(81 + index) upsert /\(id) {\"id\":\"\(id)\",\"v\":9}" }
        #expect(try harness.changes(since: 0).lines.map(\.description) == latest)
        #expect(try harness.changes(since: 40).lines.map(\.description) == latest)
        #expect(try harness.changes(since: 85).lines.map(\.description) == Array(latest.suffix(5)))
        // The next change follows the last one, never an earlier number.
        try await FixtureServer.with(EditableAPI([[item("1", 10)]] ).handler) { server in
            _ = try await harness.run(itemsJob(), server: server)
        }
        #expect(try harness.changes(since: 90).lines.map(\.description) == [#"91 upsert /1 {"id":"1","v":10}"#])
    }

    @Test("--account reads one account's changes; --local-files rewrites the URLs of downloaded files")
    func accountAndLocalFiles() async throws {
        let harness = try Harness()
        let handler: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
            if request.path.hasPrefix("/f/") { return FixtureResponse(body: Array("bytes".utf8)) }
            let who = String(request.path.dropFirst())
            return .json(PagedAPI(records: [[#"{"id":"\#(who)","f":"http://\#(request.authority)/f/\#(who).jpg"}"#]])
                .body(page: Int(request.parameter("page") ?? "") ?? 0))
        }
        let job = twoAccountsJob(downloads: "f")
        var path = ""
        try await FixtureServer.with(handler) { server in
            _ = try await harness.run(job, server: server)
            path = FileNaming.relativePath(for: "\(server.base)/f/south.jpg")
        }
        let south = try harness.changes(since: 0, account: "south", localFiles: true)
        #expect(south.lines.map { "\($0.op) \($0.account)/\($0.id) \($0.record ?? "")" }
            == [#"upsert south/south {"id":"south","f":"\#(path)"}"#])
        #expect(south.through == 2)
    }

    @Test("the feed read in memory, by rowid or by key, is the feed SQLite sorts: from every mark, of each account, cut at each limit")
    func everyWayReadsTheSameFeed() async throws {
        let harness = try Harness()
        let north = EditableAPI([[item("a", 1), item("b", 1), item("c", 1)], [item("d", 1)]])
        let south = EditableAPI([[item("a", 1), item("x", 1)]])
        let handler: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
            await (request.path.hasPrefix("/north") ? north : south).handler(request)
        }
        let job = twoAccountsJob(downloads: "f").replacingOccurrences(of: "downloads: [f]", with: "prune: true\n    deleted: gone")
        try await FixtureServer.with(handler) { server in
            _ = try await harness.run(job, server: server)
            // North: b changes, c is marked deleted, d is pruned; south: x changes.
            north.set([[item("a", 1), item("b", 2), #"{"id":"c","gone":true}"#]])
            south.set([[item("a", 1), item("x", 2)]])
            _ = try await harness.run(job, server: server)
            // North: c and d come back as new rows, b changes again; south: a is pruned.
            north.set([[item("d", 2), item("a", 1), item("b", 3)], [item("c", 3)]])
            south.set([[item("x", 2)]])
            _ = try await harness.run(job, server: server)
        }
        let database = try RecordReader.locate(table: "t_item", in: harness.output)
        func read(_ strategy: ChangeFeed.Strategy?, since: Int, account: String?, limit: Int?) throws -> [String] {
            var lines: [String] = []
            let mark = try ChangeFeed(database: database, strategy: strategy).read(
                table: "t_item", since: since, account: account, limit: limit
            ) { change, _ in
                let text = { (bytes: UnsafeBufferPointer<UInt8>?) in bytes.map { String(decoding: $0, as: UTF8.self) } ?? "-" }
                lines.append("\(change.seq) \(text(change.account))/\(text(change.id)) \(text(change.record))")
            }
            return lines + ["through \(mark.through), \(mark.count) read"]
        }
        // The two accounts' jobs run side by side, so only each account's order is fixed: each
        // key once, at its latest change; c and d deleted then stored again as new rows.
        let withoutSeq = { (lines: [String]) in lines.dropLast().map { $0.drop { $0 != " " }.dropFirst() } }
        #expect(withoutSeq(try read(.sorted, since: 0, account: "north", limit: nil)) == [
            #"north/a {"id":"a","v":1}"#, #"north/d {"id":"d","v":2}"#, #"north/b {"id":"b","v":3}"#, #"north/c {"id":"c","v":3}"#,
        ])
        #expect(withoutSeq(try read(.sorted, since: 0, account: "south", limit: nil)) == [#"south/x {"id":"x","v":2}"#, "south/a -"])
        let (last, _) = try await harness.database("t_item.sqlite").read { db in try ChangeFeed.bounds(db) }
        for since in 0 ... last {
            for account in [nil, "north", "south"] {
                for limit in [nil, 1, 2, 3] {
                    let sorted = try read(.sorted, since: since, account: account, limit: limit)
                    for strategy in [ChangeFeed.Strategy.inMemory(scanTable: true), .inMemory(scanTable: false), nil] {
                        #expect(try read(strategy, since: since, account: account, limit: limit) == sorted,
                                "\(String(describing: strategy)) since \(since), account \(account ?? "-"), limit \(limit ?? 0)")
                    }
                }
            }
        }
    }
}
