import Foundation
import GRDB
@testable import MirrorModel
@testable import MirrorStore
import Testing

@Suite("the database files of an output folder", .timeLimit(.minutes(6)))
struct DatabaseFilesTests {
    @Test("databases are told by their first bytes, read through SQLite: no journal, nothing hidden, small or other files left out")
    func listing() throws {
        let harness = try Harness()
        let folder = harness.folder
        var configuration = Configuration()
        configuration.journalMode = .wal
        let pool = try DatabasePool(path: folder + "/items.db", configuration: configuration)
        try pool.write { db in try db.execute(sql: "CREATE TABLE t (id TEXT); INSERT INTO t VALUES ('1')") }
        let header = Data("SQLite format 3\u{0}".utf8)
        // A database's header and broken pages: listed, so that opening it says what is wrong.
        try (header + Data(repeating: 7, count: 4000)).write(to: URL(fileURLWithPath: folder + "/broken.sqlite"))
        try Data(repeating: 65, count: 4096).write(to: URL(fileURLWithPath: folder + "/notes.sqlite"))
        try header.write(to: URL(fileURLWithPath: folder + "/tiny.sqlite"))
        try (header + Data(repeating: 0, count: 4000)).write(to: URL(fileURLWithPath: folder + "/.hidden.sqlite"))
        try FileManager.default.createDirectory(atPath: folder + "/files", withIntermediateDirectories: true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).contains("items.db-wal"))
        #expect(DatabaseFiles.databases(in: folder) == ["broken.sqlite", "items.db"])
        // Listed again while the pool is open, its records are still read.
        #expect(DatabaseFiles.databases(in: folder) == ["broken.sqlite", "items.db"])
        #expect(try pool.read { db in try String.fetchAll(db, sql: "SELECT id FROM t") } == ["1"])
    }
}
