import Foundation
import GRDB
@testable import MirrorModel
@testable import MirrorStore
import MirrorTestSupport
import Testing

/// A database the first release wrote (Fixtures/first-release.sqlite, made by
/// Fixtures/make-first-release.sh): job 'events' stored pages 1-2, then failed at page 3.
private let firstRelease = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("Fixtures/first-release.sqlite").path

@Suite("store upgrades", .timeLimit(.minutes(6)))
struct StoreUpgradeTests {
    @Test("a database of the first release is upgraded in place: its records, pages and runs stay, and its walk resumes")
    func firstReleaseUpgrades() async throws {
        let harness = try Harness()
        try FileManager.default.createDirectory(atPath: harness.output, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: firstRelease, toPath: harness.output + "/t_event.sqlite")
        let before = try await harness.database("t_event.sqlite").read { db in
            try Row.fetchAll(db, sql: "SELECT id, record, position, first_seen FROM t_event ORDER BY position").map(\.description)
        }
        #expect(before.count == 4)
        // `status` reads the first release's run from its columns: it kept no whole outcome.
        let old = try #require(StatusReader.read(folder: harness.output).jobs.first?.lastRun)
        #expect(old.status == .failed && old.pages.total == 2 && old.records.new == 4 && old.finishedAt == "2026-11-20T08:00:00.300Z")
        #expect(old.error?.hasSuffix("page 3 not stored, pages 1-2 kept") == true)

        let api = PagedAPI(ids: [["1", "2"], ["3", "4"], ["5", "6"], ["7"]])
        let summary = try await FixtureServer.with({ request in
            .json(api.body(page: Int(request.parameter("page") ?? "") ?? 0))
        }) { server in
            let yaml = """
                version: 1
                jobs:
                  - name: events
                    url: "BASE/events?page={page}"
                    records: data.list
                    id: id
                    table: t_event
                    concurrency: 1
                """
            let summary = try await harness.run(yaml, server: server)
            // It resumes where the first release's walk failed.
            #expect(server.requests.map(\.target) == ["/events?page=3", "/events?page=4", "/events?page=5"])
            return summary
        }
        let report = summary.jobs[0]
        #expect(report.status == .ok)
        #expect(report.resumedAt == 3)
        #expect(report.records.new == 3)
        #expect(try harness.ids("t_event") == ["1", "2", "3", "4", "5", "6", "7"])

        try await harness.database("t_event.sqlite").read { db in
            // The first release's records, byte for byte.
            let kept = try Row.fetchAll(db, sql: "SELECT id, record, position, first_seen FROM t_event WHERE id IN ('1','2','3','4') ORDER BY position")
            #expect(kept.map(\.description) == before)
            // Every migration since, applied once; the schema version now lives in user_version.
            #expect(try Int.fetchOne(db, sql: "PRAGMA user_version") == StoreSchema.migrations.count)
            #expect(StoreSchema.migrations.map(\.name) == ["mirror-bookkeeping-1", "mirror-pages-replay-2", "mirror-files-3",
                                                            "mirror-pages-total-4", "mirror-runs-outcome-5", "mirror-owners-6",
                                                            "mirror-incremental-7", "mirror-parents-8", "mirror-cursor-kind-9",
                                                            "mirror-changes-10", "mirror-pages-envelope-11", "mirror-pages-headers-12",
                                                            "mirror-deferral-13", "mirror-columns-14", "mirror-views-15",
                                                            "mirror-runs-column-warnings-16", "mirror-parents-queued-17",
                                                            "mirror-pages-has-more-18"])
            // The change feed: the first release's records first, in their walk order, then the new run's.
            #expect(try String.fetchAll(db, sql: "SELECT op || ' ' || id FROM _mirror_changes ORDER BY seq")
                == ["upsert 1", "upsert 2", "upsert 3", "upsert 4", "upsert 5", "upsert 6", "upsert 7"])
            #expect(try !db.tableExists("grdb_migrations"))
            #expect(try db.tableExists("_mirror_files"))
            #expect(try db.columns(in: "_mirror_pages").map(\.name) == [
                "job", "account", "url", "body", "page", "status", "etag", "last_modified", "records", "bytes", "fetched_at",
                "elements", "ids", "next_url", "next_cursor", "last_page", "total", "next_cursor_is_number",
                "table_name", "envelope", "records_at", "request_key", "headers", "has_more",
            ])
            // Its pages and runs are still there, beside the new ones.
            #expect(try String.fetchAll(db, sql: "SELECT etag FROM _mirror_pages WHERE page <= 2 ORDER BY page") == ["\"p1\"", "\"p2\""])
            #expect(try String.fetchAll(db, sql: "SELECT result FROM _mirror_runs ORDER BY run_id") == ["failed", "ok"])
            #expect(try Int.fetchOne(db, sql: "SELECT files_downloaded FROM _mirror_runs WHERE run_id = 1") == 0)
            #expect(try Int.fetchAll(db, sql: "SELECT column_warnings FROM _mirror_runs ORDER BY run_id") == [0, 0])
            // The new run keeps its whole outcome; the old one has none.
            #expect(try Row.fetchAll(db, sql: "SELECT json_extract(outcome, '$.resumed_at') AS r FROM _mirror_runs ORDER BY run_id")
                .map { $0["r"] as Int? } == [nil, 3])
            #expect(try String.fetchOne(db, sql: "SELECT state FROM _mirror_walks") == "complete")
        }
    }
}
