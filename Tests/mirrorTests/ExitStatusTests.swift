@testable import mirror
import MirrorModel
import Testing

/// A job's outcome with only its status set.
private func outcome(_ job: String, _ status: JobResult) -> JobOutcome {
    JobOutcome(job: job, file: "jobs.yaml", table: "t_\(job)", database: "t_\(job).sqlite", account: "", status: status,
               startedAt: "s", finishedAt: "f", stopReason: "empty page 2", complete: status == .ok,
               pages: .init(total: 1, fetched: 1, notModified: 0, skipped: 0),
               records: .init(new: 1, updated: 0, unchanged: 0, rejected: 0, pruned: 0), rejected: [], retries: 0,
               bytes: 10, durationSeconds: 0.5)
}

/// A run's summary whose state lost its lease or failed its push.
private func withState(_ jobs: [JobOutcome], leaseLost: Bool = false, failure: String? = nil) -> RunSummary {
    var summary = RunSummary(jobs: jobs)
    var state = StateSummary(location: "file:///state", shard: "0/1")
    state.leaseLost = leaseLost
    state.failure = failure
    summary.state = state
    return summary
}

@Suite("the status a run exits with, from what happened", .timeLimit(.minutes(6)))
struct ExitStatusTests {
    @Test("each fact of a run maps to the status the docs promise, the first of signal, lease, push, failure, deferral deciding")
    func statuses() {
        let ok = outcome("a", .ok), failed = outcome("b", .failed), deferred = outcome("c", .deferred)
        let interrupted = outcome("d", .interrupted)
        let cases: [(RunSummary, Int32)] = [
            (RunSummary(jobs: []), 0),
            (RunSummary(jobs: [ok, ok]), 0),
            (RunSummary(jobs: [ok, failed]), 1),
            (RunSummary(jobs: [ok, interrupted]), 1),
            (RunSummary(jobs: [ok, deferred]), 75),
            (RunSummary(jobs: [deferred, failed]), 1),
            (RunSummary(jobs: [ok, deferred], interrupted: true, timedOut: true), 1),
            (RunSummary(jobs: [interrupted], interrupted: true, signal: 2), 130),
            (RunSummary(jobs: [interrupted], interrupted: true, signal: 15), 143),
            (RunSummary(jobs: [interrupted], interrupted: true, signal: 1), 129),
            (withState([ok]), 0),
            (withState([ok], failure: "HTTP 503"), 1),
            (withState([deferred], failure: "HTTP 503"), 1),
            (withState([ok], leaseLost: true), 3),
            (withState([failed], leaseLost: true, failure: "HTTP 503"), 3),
        ]
        #expect(cases.map { ExitStatus.of($0.0) } == cases.map(\.1))
    }
}
