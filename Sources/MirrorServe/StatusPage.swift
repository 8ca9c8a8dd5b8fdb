import Foundation
import MirrorModel

/// The page at `/` of `mirror serve`: every job with its last run, result, staleness,
/// records, files and failure, and every table. Plain HTML and CSS, no script, readable on
/// a phone: on a narrow screen each job is a card, one line per column, named.
enum StatusPage {
    static func html(_ report: StatusReport, now: Date = Date()) -> String {
        var rows = ""
        for job in report.jobs {
            let run = job.lastRun
            var result = run.map { $0.status.rawValue } ?? "never run"
            if let until = run?.resumeAfter { result += " (until \(until))" }
            let records = report.tables.first { $0.table == job.table && $0.database == job.database }?.records ?? 0
            let files = job.files.map { "\($0.downloaded) (\($0.failed) failed, \($0.pending) pending)" } ?? "–"
            // A failure shows as one even when it has made the job stale too; a deferral is a
            // pause, shown as one until it has made the job stale.
            let state = switch run?.status {
            case .ok: job.stale ? "stale" : "ok"
            case .deferred: job.stale ? "stale" : "deferred"
            case .failed, .interrupted, nil: "failed"
            }
            let cells = [job.job.markupEscaped, job.table.markupEscaped, (run?.finishedAt ?? "–").markupEscaped,
                         result.markupEscaped + (job.stale ? " (stale)" : ""), "\(records)", files.markupEscaped, (run?.error ?? "").markupEscaped]
            rows += "<tr class=\"\(state)\">" + zip(columns, cells).map { "<td data-label=\"\($0)\">\($1)</td>" }.joined() + "</tr>\n"
        }
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>mirror: \(report.output.markupEscaped)</title>
            <style>
            body { font: 16px/1.4 system-ui, sans-serif; margin: 1rem; color: #222; }
            h1 { font-size: 1.3rem; }
            table { border-collapse: collapse; min-width: 100%; }
            th, td { text-align: left; padding: .35rem .6rem; border-bottom: 1px solid #ddd; white-space: nowrap; }
            tr.failed td { background: #fde8e8; }
            tr.stale td { background: #fff4d6; }
            tr.deferred td { background: #e6f0fb; }
            td:last-child { white-space: normal; min-width: 12rem; }
            @media (max-width: 40rem) {
              thead { display: none; }
              table, tbody, tr, td { display: block; min-width: 0; }
              tr { margin: 0 0 .8rem; border: 1px solid #ddd; border-radius: .4rem; overflow: hidden; }
              td { white-space: normal; overflow-wrap: anywhere; border-bottom: 0; padding: .2rem .6rem; }
              td:empty { display: none; }
              td::before { content: attr(data-label) ": "; font-weight: 600; }
            }
            </style></head><body>
            <h1>mirror: \(report.output.markupEscaped)</h1>
            <p>\(count(report.jobs.count, "job")), \(count(report.tables.count, "table")), \
            \(count(report.tables.reduce(0) { $0 + $1.records }, "record")); \
            \(report.jobs.filter { $0.lastRun?.status == .failed }.count) failed, \
            \(report.jobs.filter { $0.lastRun?.status == .deferred }.count) deferred, \(report.jobs.filter(\.stale).count) stale. \
            As of \(Timestamp.string(now)).</p>
            <table>
            <thead><tr>\(columns.map { "<th>\($0)</th>" }.joined())</tr></thead>
            <tbody>
            \(rows)</tbody></table>
            <p>JSON: <a href="/_mirror/status">status</a>, <a href="/_mirror/tables">tables</a>.</p>
            </body></html>

            """
    }

    static let columns = ["job", "table", "last run", "result", "records", "files", "failure"]

    private static func count(_ number: Int, _ noun: String) -> String {
        "\(number) \(noun)\(number == 1 ? "" : "s")"
    }
}
