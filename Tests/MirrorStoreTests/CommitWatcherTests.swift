import Foundation
import GRDB
@testable import MirrorStore
import MirrorTestSupport
import Testing

@Suite("the moment of an output folder's databases", .timeLimit(.minutes(6)))
struct CommitWatcherTests {
    @Test("a commit, a database made, removed, renamed over or grown from a small file changes the moment; other entries do not")
    func changes() throws {
        let temporary = try TemporaryFolder()
        let folder = temporary.path + "/out"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.journalMode = .wal
        /// A database of one table at `path`, written and closed.
        func makeDatabase(_ path: String, value: String) throws {
            let pool = try DatabasePool(path: path, configuration: configuration)
            try pool.write { db in try db.execute(sql: "CREATE TABLE t (v TEXT); INSERT INTO t VALUES (?)", arguments: [value]) }
            try pool.close()
        }
        let items = try DatabasePool(path: folder + "/items.db", configuration: configuration)
        try items.write { db in try db.execute(sql: "CREATE TABLE t (v TEXT)") }
        let watcher = CommitWatcher(output: folder)
        var last = try #require(watcher.moment())
        /// Asks twice: the first moment must differ from the last one or not (`changed`),
        /// the second must be the first.
        func expectMoment(changed: Bool, _ step: String) throws {
            let now = try #require(watcher.moment(), "\(step)")
            #expect((now != last) == changed, "\(step)")
            #expect(watcher.moment() == now, "\(step)")
            last = now
        }
        try expectMoment(changed: false, "nothing done")
        try items.write { db in try db.execute(sql: "INSERT INTO t VALUES ('1')") }
        try expectMoment(changed: true, "a commit")
        try Data(repeating: 65, count: 4096).write(to: URL(fileURLWithPath: folder + "/notes.txt"))
        try FileManager.default.createDirectory(atPath: folder + "/files", withIntermediateDirectories: true)
        try Data("SQLite format 3\u{0}".utf8).write(to: URL(fileURLWithPath: folder + "/later.db"))
        try expectMoment(changed: false, "a file, a folder and a database's first bytes")
        // The small file becomes a database in place: no entry is made.
        try makeDatabase(temporary.path + "/made.db", value: "made")
        let handle = try #require(FileHandle(forWritingAtPath: folder + "/later.db"))
        try handle.write(contentsOf: try Data(contentsOf: URL(fileURLWithPath: temporary.path + "/made.db")))
        try handle.close()
        try expectMoment(changed: true, "a small file grown into a database")
        try makeDatabase(temporary.path + "/other.db", value: "other")
        try FileManager.default.copyItem(atPath: temporary.path + "/other.db", toPath: folder + "/added.db")
        try expectMoment(changed: true, "a database added")
        #expect(rename(temporary.path + "/other.db", folder + "/later.db") == 0)
        try expectMoment(changed: true, "a database renamed over another")
        try FileManager.default.removeItem(atPath: folder + "/added.db")
        try expectMoment(changed: true, "a database removed")
        // The folder removed and made again, with the same names.
        try items.close()
        try FileManager.default.moveItem(atPath: folder, toPath: temporary.path + "/gone")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try makeDatabase(folder + "/items.db", value: "again")
        try expectMoment(changed: true, "the folder made again")
        try makeDatabase(folder + "/later.db", value: "later")
        try expectMoment(changed: true, "a database added to the folder made again")
    }

    @Test("a request shares the latest moment when it was begun after the request arrived, and sees every commit made before it arrived")
    func sharedAfterArrival() throws {
        let temporary = try TemporaryFolder()
        let (items, watcher) = try watchedDatabase(in: temporary.path)
        let first = CommitWatcher.now()
        let before = try #require(watcher.moment(after: first))
        try items.write { db in try db.execute(sql: "INSERT INTO t VALUES ('1')") }
        // A request that arrived before the commit may be answered as of a moment begun
        // after it arrived: the one taken before the commit is shared, the databases not asked.
        #expect(watcher.moment(after: first) == before)
        // One that arrived after the commit sees it, and so does one asking with no arrival.
        let second = CommitWatcher.now()
        let after = try #require(watcher.moment(after: second))
        #expect(after != before)
        #expect(watcher.moment(after: nil) == after)
        // Shared from now on with both, which arrived before it was begun.
        #expect(watcher.moment(after: second) == after)
        #expect(watcher.moment(after: first) == after)
        try items.write { db in try db.execute(sql: "INSERT INTO t VALUES ('2')") }
        #expect(watcher.moment(after: CommitWatcher.now()) != after)
        try items.close()
    }

    @Test("every commit of another connection changes the moment, asked between each, and asking again without one does not")
    func everyCommit() throws {
        let temporary = try TemporaryFolder()
        let (items, watcher) = try watchedDatabase(in: temporary.path)
        var last = try #require(watcher.moment())
        var unchanged = 0
        for value in 0 ..< 200 {
            try items.write { db in try db.execute(sql: "INSERT INTO t VALUES (?)", arguments: [value]) }
            let now = try #require(watcher.moment())
            if now == last { unchanged += 1 }
            #expect(watcher.moment() == now)
            last = now
        }
        // After a checkpoint that starts the WAL again, a commit still changes the moment.
        try items.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        last = try #require(watcher.moment())
        try items.write { db in try db.execute(sql: "INSERT INTO t VALUES (-1)") }
        #expect(watcher.moment() != last)
        #expect(unchanged == 0)
        try items.close()
    }

    /// A WAL database of one table `t (v)` in `folder`, and a watcher of the folder.
    private func watchedDatabase(in folder: String) throws -> (DatabasePool, CommitWatcher) {
        var configuration = Configuration()
        configuration.journalMode = .wal
        let items = try DatabasePool(path: folder + "/items.db", configuration: configuration)
        try items.write { db in try db.execute(sql: "CREATE TABLE t (v)") }
        return (items, CommitWatcher(output: folder))
    }
}
