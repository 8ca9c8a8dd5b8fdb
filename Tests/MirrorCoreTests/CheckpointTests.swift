import Foundation
import GRDB
@testable import MirrorModel
import MirrorTestSupport
import Testing

@Suite("the end of a job", .timeLimit(.minutes(6)))
struct CheckpointTests {
    /// Bytes of the database's WAL, nil when there is none.
    func walSize(_ harness: Harness, _ database: String = "t_item.sqlite") -> Int? {
        let attributes = try? FileManager.default.attributesOfItem(atPath: harness.output + "/" + database + "-wal")
        return (attributes?[.size] as? NSNumber)?.intValue
    }

    @Test("a reader open while the run ends keeps no WAL of pages alive: the database file alone holds them")
    func truncatedWAL() async throws {
        let harness = try Harness()
        let api = PagedAPI(ids: [(1...40).map { "a\($0)" }, (1...40).map { "b\($0)" }])
        try await FixtureServer.with({ request in
            .json(api.body(page: Int(request.parameter("page") ?? "") ?? 0))
        }) { server in
            _ = try await harness.run(itemsJob(), server: server)
            // A device reads the file read-only, and stays open (idle) while the next run writes and ends.
            var configuration = Configuration()
            configuration.readonly = true
            let reader = try DatabaseQueue(path: harness.output + "/t_item.sqlite", configuration: configuration)
            #expect(try await reader.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM t_item") } == 80)
            let summary = try await harness.run(itemsJob(), server: server, refresh: true)
            #expect(summary.allSucceeded)
            #expect((walSize(harness) ?? 0) == 0)
            #expect(try await reader.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM t_item") } == 80)
            try reader.close()
        }
        // A copy of the database file alone, without its companions, holds every record.
        let copy = harness.folder + "/copy.sqlite"
        try FileManager.default.copyItem(atPath: harness.output + "/t_item.sqlite", toPath: copy)
        let alone = try DatabaseQueue(path: copy)
        #expect(try await alone.read { db in try String.fetchAll(db, sql: "SELECT id FROM t_item ORDER BY position") }
            == (1...40).map { "a\($0)" } + (1...40).map { "b\($0)" })
    }
}
