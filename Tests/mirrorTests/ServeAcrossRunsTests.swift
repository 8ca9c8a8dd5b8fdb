import Foundation
@testable import MirrorModel
import MirrorTestSupport
import Synchronization
import Testing

/// An API of pages of `{"id":N,"v":V}` records, rewritten by the test between runs.
private final class PagedItems: Sendable {
    let pages = Mutex<[[(id: Int, version: Int)]]>([[(1, 1), (2, 1), (3, 1)]])

    var handler: @Sendable (FixtureRequest) async -> FixtureResponse {
        { request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            let items = self.pages.withLock { pages in page >= 1 && page <= pages.count ? pages[page - 1] : [] }
            return .json(#"{"data":[\#(items.map { #"{"id":\#($0.id),"v":\#($0.version)}"# }.joined(separator: ","))]}"#)
        }
    }

    func change(_ body: @Sendable (inout [[(id: Int, version: Int)]]) -> Void) { pages.withLock { body(&$0) } }
}

@Suite("mirror serve across runs", .timeLimit(.minutes(6)))
struct ServeAcrossRunsTests {
    /// What a client reads: the API's pages, the records and the tables.
    static let targets = ["/items?page=1", "/items?page=2", "/items?page=3", "/items?page=4",
                          "/_mirror/tables/t_item", "/_mirror/changes/t_item"]

    @Test("one serve process across five runs that insert, update, delete and add pages answers as a fresh one does")
    func staysCurrent() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let api = PagedItems()
        try await FixtureServer.with(api.handler) { server in
            try itemsYAML.replacingOccurrences(of: "BASE", with: server.base)
                .write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            #expect(try await mirror(["run", "jobs.yaml", "--quiet"], in: folder).status == 0)
            let serving = try await Served.start(in: folder, name: "serving")
            let first = try await serving.get("/items?page=1")
            #expect(first.hasSuffix(#"{"data":[{"id":1,"v":1},{"id":2,"v":1},{"id":3,"v":1}]}"#))
            let firstETag = try #require(first.prefix { $0 != "\n" }.split(separator: " ").last.map(String.init))
            let changes: [(String, @Sendable (inout [[(id: Int, version: Int)]]) -> Void)] = [
                ("nothing changed", { _ in }),
                ("nothing changed again", { _ in }),
                ("record 3 updated", { $0[0][2].version = 2 }),
                ("pages 2 and 3 added", { $0 += [[(4, 1), (5, 1)], [(6, 1)]] }),
                ("record 2 deleted, record 7 inserted", { $0[0].remove(at: 1); $0[0].append((7, 1)) }),
            ]
            for (step, change) in changes {
                api.change(change)
                let run = try await mirror(["run", "jobs.yaml", "--quiet"], in: folder)
                #expect(run.status == 0, "\(step): \(run.stderr)")
                let fresh = try await Served.start(in: folder, name: "fresh")
                for target in Self.targets {
                    let kept = try await serving.get(target)
                    let new = try await fresh.get(target)
                    #expect(kept == new, "\(step): \(target)")
                }
                #expect(await fresh.stop() == .exited(0))
            }
            // The records as the last run left them, and the first ETag no longer matches.
            #expect(try await serving.get("/items?page=1").hasSuffix(
                #"{"data":[{"id":1,"v":1},{"id":3,"v":2},{"id":7,"v":1}]}"#))
            #expect(try await serving.get("/items?page=1", ifNoneMatch: firstETag).hasPrefix("200 "))
            #expect(try await serving.get("/items?page=2").hasSuffix(#"{"data":[{"id":4,"v":1},{"id":5,"v":1}]}"#))
            #expect(await serving.stop() == .exited(0))
        }
    }
}
