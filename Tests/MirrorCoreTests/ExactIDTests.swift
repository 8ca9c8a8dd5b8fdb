import Foundation
import GRDB
import Logging
@testable import MirrorCore
@testable import MirrorHTTP
@testable import MirrorModel
@testable import MirrorStore
@testable import MirrorExport
import MirrorTestSupport
import Testing

/// NFC `café`, NFD `café`, `Å` (U+00C5) and the Ångström sign (U+212B), as JSON escapes.
private let equivalentIDs = [#"caf\u00e9"#, #"cafe\u0301"#, #"\u00c5"#, #"\u212b"#]
/// The same ids as the bytes SQLite stores, hex.
private let equivalentHex = ["636166C3A9", "63616665CC81", "C385", "E284AB"]

private func page(_ escapedIDs: [String], extra: String = "") -> String {
    #"{"data":{"list":[\#(escapedIDs.map { #"{"id":"\#($0)"}"# }.joined(separator: ","))]\#(extra)}}"#
}

@Suite("ids byte for byte", .timeLimit(.minutes(6)))
struct ExactIDTests {
    /// The stored ids in walk order, as hex of their bytes (GRDB reads text up to a NUL).
    func storedHex(_ harness: Harness) throws -> [String] {
        try harness.database("t_item.sqlite").read { db in
            try String.fetchAll(db, sql: "SELECT hex(id) FROM t_item ORDER BY position")
        }
    }

    @Test("a 304 replays ids holding a NUL: every record is seen again, none is missing")
    func nulReplay() async throws {
        let harness = try Harness()
        let body = page([#"a\u0000b"#, #"a\u0000c"#, "a"])
        let second = try await FixtureServer.with({ request in
            if request.headers["if-none-match"] == "\"v1\"" { return FixtureResponse(status: 304, headers: [("ETag", "\"v1\"")], body: []) }
            return .json(body, headers: [("ETag", "\"v1\"")])
        }) { server in
            _ = try await harness.run(itemsJob("pages: { from: 1, to: 1 }"), server: server)
            let second = try await harness.run(itemsJob("pages: { from: 1, to: 1 }"), server: server)
            #expect(server.requests.count == 2)
            return second
        }
        let report = second.jobs[0]
        #expect(report.succeeded)
        #expect(report.pages.notModified == 1)
        #expect(report.records.unchanged == 3)
        #expect(report.records.new == 0)
        #expect(try storedHex(harness) == ["610062", "610063", "61"])
    }

    @Test("canonically equivalent ids in one page are four records")
    func equivalentInPage() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ _ in .json(page(equivalentIDs)) }) { server in
            try await harness.run(itemsJob("pages: { from: 1, to: 1 }"), server: server)
        }
        #expect(summary.jobs[0].records.new == 4)
        #expect(try storedHex(harness) == equivalentHex)
        let exported = try harness.export(Exporter.Options(table: "t_item"))
        #expect(exported == equivalentIDs.map { #"{"id":"\#($0)"}"# + "\n" }.joined())
    }

    @Test("an id repeated byte for byte is still stored once, its last occurrence")
    func repeatedExactly() async throws {
        let harness = try Harness()
        let body = #"{"data":{"list":[{"id":"caf\u00e9","v":1},{"id":"cafe\u0301","v":2},{"id":"caf\u00e9","v":3}]}}"#
        let verified = try await FixtureServer.with({ _ in .json(body) }) { server in
            _ = try await harness.run(itemsJob("pages: { from: 1, to: 1 }"), server: server)
            let file = try harness.load(itemsJob("pages: { from: 1, to: 1 }"), server: server)
            return try await Verifier(client: HTTPClient(), logger: .init(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }))
                .verify([file], options: Verifier.Options())
        }
        #expect(try storedHex(harness) == ["63616665CC81", "636166C3A9"])
        #expect(verified.jobs[0].walk.repeated == [RepeatedID(page: 1, id: "caf\u{e9}", indexes: [0, 2])])
        #expect(try harness.record("cafe\u{301}") == #"{"id":"cafe\u0301","v":2}"#)
    }

    @Test("cursors that differ only in normalization are no loop")
    func equivalentCursors() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            // Matched by bytes: a Swift `switch` on strings would match either form.
            switch Array((request.parameter("cursor") ?? "").utf8) {
            case []: return .json(page(["1"], extra: #","next":"caf\u00e9""#))
            case Array("caf\u{e9}".utf8): return .json(page(["2"], extra: #","next":"cafe\u0301""#))
            case Array("cafe\u{301}".utf8): return .json(page(["3"], extra: #","next":null"#))
            default: return .json(page([]), status: 400)
            }
        }) { server in
            try await harness.run(itemsJob("next: data.next\nconcurrency: 1", url: "BASE/items?cursor={cursor}"), server: server)
        }
        let report = summary.jobs[0]
        #expect(report.succeeded)
        #expect(report.stopReason == StopReason.noNextPage(page: 3).description)
        #expect(try harness.ids() == ["1", "2", "3"])
    }

    @Test("verify: canonically equivalent ids on two pages are no drift")
    func noDrift() async throws {
        let harness = try Harness()
        let summary = try await FixtureServer.with({ request in
            switch request.parameter("page") {
            case "1": return .json(page([#"caf\u00e9"#, #"\u00c5"#]))
            case "2": return .json(page([#"cafe\u0301"#, #"\u212b"#, #"caf\u00e9"#]))
            default: return .json(page([]))
            }
        }) { server in
            let file = try harness.load(itemsJob("pages: { from: 1 }"), server: server)
            var options = Verifier.Options()
            options.retry = RetryPolicy(baseDelay: 0.01)
            return try await Verifier(client: HTTPClient(), logger: .init(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }))
                .verify([file], options: options)
        }
        #expect(summary.jobs[0].faults.map { $0.description } == ["page 2: id 'caf\u{e9}' was already on page 1 (drift)"])
    }
}
