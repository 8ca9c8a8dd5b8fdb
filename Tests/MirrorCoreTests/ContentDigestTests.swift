import Foundation
@testable import MirrorStore
import MirrorTestSupport
import Synchronization
import Testing

/// The digest remote state compares, of databases that whole runs wrote.
@Suite("the digest of a table's content", .timeLimit(.minutes(6)))
struct ContentDigestTests {
    @Test("the digest of content: times and the runs' history left out, every record, page and checkpoint in")
    func contentDigest() async throws {
        let harness = try Harness()
        let api = Mutex(PagedAPI(ids: [["1", "2"], ["3"]]))
        try await FixtureServer.with({ request in
            .json(api.withLock { $0.body(page: Int(request.parameter("page") ?? "") ?? 0) })
        }) { server in
            let path = harness.output + "/t_item.sqlite"
            _ = try await harness.run(itemsJob(), server: server)
            let first = try DatabaseContent.digest(of: path)
            // A rerun that finds it all as it was: new times, a run more, the same digest.
            let times = try harness.typedRows("SELECT DISTINCT last_seen FROM t_item")
            _ = try await harness.run(itemsJob(), server: server)
            #expect(try harness.typedRows("SELECT DISTINCT last_seen FROM t_item") != times)
            #expect(try harness.typedRows("SELECT count(*) FROM _mirror_runs") == [["integer:2"]])
            #expect(try DatabaseContent.digest(of: path) == first)
            // Its consistent copy: the same digest.
            try DatabaseCopy.write(from: path, to: harness.folder + "/copy")
            #expect(try DatabaseContent.digest(of: harness.folder + "/copy") == first)
            // A record that changed: another digest; a walk cut after its first page (a checkpoint
            // that moved): another again.
            api.withLock { $0 = PagedAPI(ids: [["1", "2"], ["3", "4"]]) }
            _ = try await harness.run(itemsJob(), server: server)
            let changed = try DatabaseContent.digest(of: path)
            #expect(changed != first)
            _ = try await harness.run(itemsJob(), server: server, maxPages: 1)
            #expect(try DatabaseContent.digest(of: path) != changed)
        }
    }
}
