import Foundation
import GRDB
@testable import MirrorCore
@testable import MirrorJobFile
@testable import MirrorModel
import MirrorTestSupport
import Synchronization
import Testing

@Suite("tables jobs share", .timeLimit(.minutes(6)))
struct TableClaimTests {
    @Test("jobs of two files that write one output folder are checked against each other before any request")
    func acrossFiles() throws {
        let harness = try Harness()
        let yaml = itemsJob().replacingOccurrences(of: "BASE", with: "http://127.0.0.1:9")
        let first = try harness.load(yaml)
        let second = try JobFileLoader(environment: [:]).parse(
            text: yaml.replacingOccurrences(of: "name: items", with: "name: more"), path: "more.yaml", folder: ".")
        var options = Runner.Options()
        options.output = harness.output
        #expect(throws: UsageError.self) { try Runner.select([first, second], options: options) }
        do {
            _ = try Runner.select([first, second], options: options)
        } catch let error as UsageError {
            #expect(error.description == "more.yaml: job 'more' stores into table 't_item' of t_item.sqlite under no "
                + "account, as job 'items' does: each would overwrite the other's records and prune delete them; set "
                + "share_table: true on both to mean it, or give one its own table or account (both in output folder "
                + "'\(harness.output)')")
        }
    }

    @Test("jobs sharing a table store one row per id; each one's prune removes only ids its own pages held")
    func sharedPrune() async throws {
        let harness = try Harness()
        let pages = Mutex(["a": ["1", "2", "9"], "b": ["3", "4", "9"]])
        let yaml = """
            version: 1
            defaults: { records: data.list, id: id, share_table: true, prune: true }
            jobs:
              - { name: a, url: "BASE/a", table: t_item }
              - { name: b, url: "BASE/b", table: t_item }
            """
        try await FixtureServer.with({ request in
            let ids = pages.withLock { $0[String(request.path.dropFirst())] ?? [] }
            return .json(#"{"data":{"list":["# + ids.map { #"{"id":"\#($0)","from":"\#(request.path)"}"# }
                .joined(separator: ",") + "]}}")
        }) { server in
            let first = try await harness.run(yaml, server: server)
            #expect(first.jobs.map(\.succeeded) == [true, true])
            #expect(try Set(harness.ids()) == ["1", "2", "3", "4", "9"])
            // Job a no longer lists 2 and 9; b still lists 9. Only a runs.
            pages.withLock { $0["a"] = ["1"] }
            let second = try await harness.run(yaml, server: server, jobs: ["a"])
            #expect(second.jobs.map(\.records.pruned) == [2])
            // 9 was a's too: it goes until b sees it again. b's own 3 and 4 stay.
            #expect(try Set(harness.ids()) == ["1", "3", "4"])
            let third = try await harness.run(yaml, server: server, jobs: ["b"])
            #expect(third.jobs.map(\.records.pruned) == [0])
            #expect(try Set(harness.ids()) == ["1", "3", "4", "9"])
        }
    }
}
