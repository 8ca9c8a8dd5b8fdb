@testable import mirror
import MirrorModel
import Testing

/// An outcome of job `items` with the counts the summary line is made of.
private func outcome(status: JobResult = .ok, pages: Int, records: JobOutcome.Records, stopReason: String = "empty page 2",
                     files: DownloadSummary? = nil, error: String? = nil, since: String? = nil,
                     columnWarnings: [ColumnWarning]? = nil) -> JobOutcome {
    JobOutcome(job: "items", file: "jobs.yaml", table: "t_item", database: "t_item.sqlite", account: "", status: status,
               startedAt: "2024-01-03T00:00:00.000Z", finishedAt: "2024-01-03T00:00:01.000Z", stopReason: stopReason,
               complete: status == .ok, pages: .init(total: pages, fetched: pages, notModified: 0, skipped: 0), records: records,
               rejected: [], retries: 0, bytes: 4096, durationSeconds: 1.234, files: files, error: error, since: since,
               columnWarnings: columnWarnings)
}

@Suite("the lines run and status print", .timeLimit(.minutes(6)))
struct PrintedLinesTests {
    @Test("a job's summary line names its column warnings, deletions, since, files and their failures, whole")
    func summaryLines() {
        let warned = outcome(pages: 4, records: .init(new: 6, updated: 0, unchanged: 0, rejected: 0, pruned: 0), stopReason: "empty page 4",
                             columnWarnings: [ColumnWarning(column: "n", type: .integer, records: 4), ColumnWarning(column: "t", type: .text, records: 3),
                                              ColumnWarning(column: "b", type: .boolean, records: 2), ColumnWarning(column: "w", type: .time, records: 4),
                                              ColumnWarning(column: "r", type: .real, records: 3)])
        #expect(warned.summaryLines == ["items: ok, 4 pages, 6 records (6 new, 0 updated, 0 unchanged), "
            + "16 column warnings (n: 4 not integer, t: 3 not text, b: 2 not boolean, w: 4 not time, r: 3 not real), stopped: empty page 4, 1.23s"])
        let unchanged = outcome(pages: 4, records: .init(new: 0, updated: 0, unchanged: 6, rejected: 0, pruned: 0), stopReason: "empty page 4")
        #expect(unchanged.summaryLines == ["items: ok, 4 pages, 6 records (0 new, 0 updated, 6 unchanged), stopped: empty page 4, 1.23s"])
        let deleted = outcome(pages: 1, records: .init(new: 0, updated: 0, unchanged: 1, rejected: 0, pruned: 0, deleted: 1),
                              since: "2024-01-03T00:00:00Z")
        #expect(deleted.summaryLines == ["items: ok, 1 page, 1 records (0 new, 0 updated, 1 unchanged), 1 deleted, "
            + "since 2024-01-03T00:00:00Z, stopped: empty page 2, 1.23s"])
        let refused = outcome(pages: 2, records: .init(new: 2, updated: 0, unchanged: 0, rejected: 0, pruned: 0),
                              files: DownloadSummary(failed: [FileFailure(url: "http://127.0.0.1/f/a.jpg", error: "'files' is a symbolic link"),
                                                              FileFailure(url: "http://127.0.0.1/f/missing.jpg?REDACTED", error: "HTTP 404")]))
        #expect(refused.summaryLines == [
            "items: ok, 2 pages, 2 records (2 new, 0 updated, 0 unchanged), 0 files (0 B), 2 failed, stopped: empty page 2, 1.23s",
            "  file failed: http://127.0.0.1/f/a.jpg: 'files' is a symbolic link",
            "  file failed: http://127.0.0.1/f/missing.jpg?REDACTED: HTTP 404",
        ])
        let downloaded = outcome(pages: 2, records: .init(new: 5, updated: 0, unchanged: 0, rejected: 0, pruned: 0),
                                 files: DownloadSummary(downloaded: 5, bytes: 3 << 20))
        #expect(downloaded.summaryLines == ["items: ok, 2 pages, 5 records (5 new, 0 updated, 0 unchanged), 5 files (3.0 MB), stopped: empty page 2, 1.23s"])
    }

    @Test("a job's summary line says the pages not modified or skipped, retries and where it resumed; a rejected record has a line of its own")
    func reusedPages() {
        var reused = outcome(pages: 3, records: .init(new: 0, updated: 0, unchanged: 4, rejected: 1, pruned: 0), stopReason: "no next page after page 3")
        reused.pages = .init(total: 3, fetched: 0, notModified: 2, skipped: 1)
        reused.retries = 1
        reused.resumedAt = 4
        reused.rejected = [RejectedRecord(page: 1, index: 0, reason: "record 1 has no usable id at 'id' (found nothing)")]
        #expect(reused.summaryLines == [
            "items: ok, 3 pages (2 not modified, 1 skipped by refresh_after), 4 records (0 new, 0 updated, 4 unchanged), 1 rejected, "
                + "1 retry, resumed at page 4, stopped: no next page after page 3, 1.23s",
            "  rejected: page 1: record 1 has no usable id at 'id' (found nothing)",
        ])
    }

    @Test("a deferred, failed or stopped job's line is its status and its error")
    func endedLines() {
        let records = JobOutcome.Records(new: 3, updated: 0, unchanged: 0, rejected: 0, pruned: 0)
        let error = "job 'items': GET http://127.0.0.1/items?page=3: HTTP 429: Retry-After asks to wait 1h, longer than max_wait 5m; "
            + "deferred until 2024-01-03T01:00:00.000Z: page 3 not stored, pages 1-2 kept"
        #expect(outcome(status: .deferred, pages: 2, records: records, error: error).summaryLines == ["items: DEFERRED: " + error])
        #expect(outcome(status: .failed, pages: 2, records: records, error: "job 'items': HTTP 500").summaryLines
            == ["items: FAILED: job 'items': HTTP 500"])
        #expect(outcome(status: .interrupted, pages: 2, records: records).summaryLines == ["items: INTERRUPTED: interrupted"])
    }

    @Test("the progress line counts records, bytes, files and their failures, and says how the job ended")
    func progressLines() {
        var walk = WalkResult()
        walk.counts.new = 3
        walk.bytes = 2048
        let files = DownloadSummary(downloaded: 2, bytes: 3 << 20, failed: [FileFailure(url: "http://x/1.jpg", error: "HTTP 404")])
        #expect(JobProgress(job: "items", page: 3, lastPage: 10, walk: walk, files: files).text
            == "items: page 3/10, 3 records (3 new), 2.0 KB, 2 files (3.0 MB), 1 failed")
        #expect(JobProgress(job: "items", ending: .complete, page: 3, lastPage: nil, walk: walk,
                            files: DownloadSummary(downloaded: 1, bytes: 10)).text
            == "items: page 3, 3 records (3 new), 2.0 KB, 1 file (10 B), done")
        #expect(JobProgress(job: "items", page: nil, lastPage: 4, walk: WalkResult()).text == "items: starting, 0 records (0 new), 0 B")
        walk.counts.new = 8
        walk.bytes = 4 * 1000
        #expect(JobProgress(job: "items", ending: .complete, page: 4, lastPage: 4, walk: walk).text
            == "items: page 4/4, 8 records (8 new), 3.9 KB, done")
    }

    @Test("status names each table and each job's last run, its files, its since and its parents")
    func statusText() {
        var run = outcome(pages: 3, records: .init(new: 4, updated: 1, unchanged: 0, rejected: 0, pruned: 0, deleted: 2),
                          error: "job 'items': HTTP 500")
        run.status = .failed
        let report = StatusReport(output: "cache", tables: [.init(database: "t_item.sqlite", table: "t_item", records: 4, accounts: 1)], jobs: [
            .init(job: "items", account: "", table: "t_item", database: "t_item.sqlite", lastRun: run,
                  files: .init(downloaded: 2, bytes: 2048, failed: 1, pending: 3), stale: true, since: "2024-01-05T10:00:00Z",
                  highWater: "2024-01-05T10:00:00Z", highWaterPath: "updated_at", parentsPending: 5, parentsFailed: 0),
            .init(job: "later", account: "acme", table: "t_later", database: "t_later.sqlite", stale: false),
            .init(job: "never", account: "", table: "t_never", database: "t_never.sqlite", stale: true),
        ])
        #expect(report.text == """
            output: cache
            table t_item (t_item.sqlite): 4 records, 1 account
            job items: last run 2024-01-03T00:00:01.000Z failed, 3 pages, 4 new, 1 updated, 0 unchanged, 2 deleted, stopped: empty page 2, STALE
              files: 2 downloaded (2.0 KB), 1 failed, 3 pending
              since: 2024-01-05T10:00:00Z, highest updated_at stored: 2024-01-05T10:00:00Z
              parents: 5 pending, 0 failed
              error: job 'items': HTTP 500
            job later [account acme]: never run
            job never: never run, STALE
            """)
        #expect(StatusReport(output: "cache", tables: [], jobs: []).text == "output: cache\nno tables yet")
    }
}
