import Foundation
import GRDB
@testable import MirrorExport
import MirrorModel
@testable import MirrorStore
import Testing

/// `(account, id, record as JSON value)` of every row of a table of a database file.
private func rows(_ path: String, table: String = "t_item") throws -> [[String]] {
    try DatabaseQueue(path: path).read { db in
        try Row.fetchAll(db, sql: "SELECT account, id, json(record) AS record FROM \"\(table)\" ORDER BY account, id")
            .map { [$0["account"], $0["id"], $0["record"]] }
    }
}

private var snakeCase: JSONDecoder {
    let decoder = JSONDecoder()
    decoder.keyDecodingStrategy = .convertFromSnakeCase
    return decoder
}

extension Stored {
    /// Writes a snapshot of the output folder to `name` in the test's folder.
    func snapshot(_ name: String, tables: [String] = []) async throws -> SnapshotWriter.Written {
        var options = SnapshotWriter.Options(output: output, destination: folder + "/" + name, mirrorVersion: "test")
        options.tables = tables
        return try await SnapshotWriter(options: options).write()
    }
}

@Suite("snapshots of a folder the store wrote", .timeLimit(.minutes(6)))
struct SnapshotWriterTests {
    @Test("a failed snapshot leaves neither DIR.partial nor DIR; a new one replaces an earlier one whole")
    func nothingHalfDone() async throws {
        let harness = try Stored()
        try await harness.store([[("1", #"{"id":"1"}"#), ("2", #"{"id":"2"}"#)]])
        let destination = harness.folder + "/snap"
        let manager = FileManager.default
        let missing = await #expect(throws: SnapshotWriter.Failure.self) { try await harness.snapshot("snap", tables: ["t_nope"]) }
        #expect(missing?.description == "no table 't_nope' in '\(harness.output)'")
        #expect(!manager.fileExists(atPath: destination) && !manager.fileExists(atPath: destination + ".partial"))

        // A database that cannot be read fails the snapshot, and nothing is left.
        try Data("SQLite format 3\u{0}".utf8 + Data(repeating: 7, count: 4000))
            .write(to: URL(fileURLWithPath: harness.output + "/broken.sqlite"))
        let broken = await #expect(throws: SnapshotWriter.Failure.self) { try await harness.snapshot("snap") }
        #expect(broken?.description.hasPrefix("cannot copy '\(harness.output)/broken.sqlite': ") == true)
        #expect(!manager.fileExists(atPath: destination) && !manager.fileExists(atPath: destination + ".partial"))
        try manager.removeItem(atPath: harness.output + "/broken.sqlite")

        // A folder that is not a snapshot is never replaced.
        try manager.createDirectory(atPath: harness.folder + "/mine", withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: URL(fileURLWithPath: harness.folder + "/mine/notes.txt"))
        let refused = await #expect(throws: SnapshotWriter.Failure.self) { try await harness.snapshot("mine") }
        #expect(refused?.description == "'\(harness.folder)/mine' exists and is not a snapshot (it has no manifest.json): "
            + "name a new folder, or one that holds an earlier snapshot")
        #expect(try manager.contentsOfDirectory(atPath: harness.folder + "/mine") == ["notes.txt"])

        // What a killed snapshot left is cleared; an earlier snapshot is replaced in one step.
        try manager.createDirectory(atPath: destination + ".partial", withIntermediateDirectories: true)
        try Data("half".utf8).write(to: URL(fileURLWithPath: destination + ".partial/t_item.sqlite"))
        let first = try await harness.snapshot("snap")
        #expect(first.manifest.databases[0].tables[0].records == 2)
        try await harness.store([[("1", #"{"id":"1"}"#), ("2", #"{"id":"2"}"#), ("3", #"{"id":"3"}"#)]])
        let second = try await harness.snapshot("snap")
        #expect(second.manifest.databases[0].tables[0].records == 3)
        #expect(try manager.contentsOfDirectory(atPath: harness.folder).filter { $0.hasPrefix("snap") }.sorted()
            == ["snap", "snap.lock"])
        let manifest = try snakeCase.decode(SnapshotManifest.self,
                                            from: Data(contentsOf: URL(fileURLWithPath: destination + "/manifest.json")))
        #expect(manifest == second.manifest)
        #expect(try rows(destination + "/t_item.sqlite").map { $0[1] } == ["1", "2", "3"])
        // The copy's pages are the store's size, 8 KiB, not SQLite's default of 4.
        #expect(try await DatabaseQueue(path: destination + "/t_item.sqlite").read { db in
            try Int.fetchOne(db, sql: "PRAGMA page_size")
        } == 8192)
    }

    @Test("a commit landing in the middle of a copy is not in it: every table of a database is read in one transaction")
    func oneTransaction() async throws {
        let harness = try Stored()
        for table in ["t_a", "t_b"] {
            try await harness.store([[("1", #"{"id":"1"}"#), ("2", #"{"id":"2"}"#)]], table: table, database: "shared.sqlite")
        }
        let writer = try DatabaseQueue(path: harness.output + "/shared.sqlite")
        var steps = 0
        var options = SnapshotWriter.Options(output: harness.output, destination: harness.folder + "/snap", mirrorVersion: "test")
        options.withFiles = true
        let written = try SnapshotWriter(options: options).write(stop: SnapshotCopy.Stop()) {
            steps += 1
            // After t_a is copied, a run commits to both tables.
            guard steps == 1 else { return }
            try writer.inDatabase { db in
                try db.execute(sql: """
                    INSERT INTO t_a (account, id, record, position, first_seen, last_seen) VALUES ('', '3', '{"id":"3"}', 2, 'x', 'x');
                    INSERT INTO t_b (account, id, record, position, first_seen, last_seen) VALUES ('', '3', '{"id":"3"}', 2, 'x', 'x');
                    """)
            }
        }
        #expect(steps >= 2)
        #expect(written.manifest.databases.map(\.tables) == [[
            SnapshotManifest.Table(name: "t_a", records: 2), SnapshotManifest.Table(name: "t_b", records: 2),
        ]])
        #expect(written.manifest.databases.map(\.changesThrough) == [4])
        #expect(try rows(harness.folder + "/snap/shared.sqlite", table: "t_b").map { $0[1] } == ["1", "2"])
        // The commit itself landed: the next snapshot has it.
        let next = try await harness.snapshot("snap")
        #expect(next.manifest.databases.map(\.changesThrough) == [6])
        #expect(try rows(harness.folder + "/snap/shared.sqlite", table: "t_b").map { $0[1] } == ["1", "2", "3"])
    }
}
