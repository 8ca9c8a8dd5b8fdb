import Foundation
@testable import MirrorModel
import Testing

private struct Reason: Error, CustomStringConvertible {
    let description: String
}

@Suite("job failures", .timeLimit(.minutes(6)))
struct JobFailureTests {
    @Test("each failure is said as docs/ say it, composed in one place")
    func sentences() {
        let page = PageFailure(page: 4, method: "GET", url: "https://api.test/events?page=4&key=REDACTED", status: 503,
                               problem: "HTTP 503 after 3 retries")
        let kept = JobFailure.Kept(first: 1, last: 3)
        let failures: [(JobFailure, String)] = [
            (.page(page, job: "events", kept: kept),
             "job 'events': GET https://api.test/events?page=4&key=REDACTED: HTTP 503: HTTP 503 after 3 retries; page 4 not stored, pages 1-3 kept"),
            (.page(PageFailure(page: 1, method: "POST", url: "https://api.test/q", problem: "connection refused"), job: "events",
                   kept: JobFailure.Kept(first: nil, last: nil)),
             "job 'events': POST https://api.test/q: no response: connection refused; page 1 not stored, nothing stored"),
            (.loop("next URL seen twice", method: "GET", url: "https://api.test/e?c=2", job: "events", kept: JobFailure.Kept(first: 1, last: 1)),
             "job 'events': GET https://api.test/e?c=2: loop: next URL seen twice; page 1 kept"),
            (.interrupted(job: "events", page: 4, kept: kept), "job 'events': interrupted at page 4; pages 1-3 kept"),
            (.parentsInterrupted(job: "comments", walked: 2, queued: 5),
             "job 'comments': interrupted after 2 of 5 parents; the others are walked by the next run"),
            (.parentsFailed(job: "comments", failed: 1, queued: 3, first: .parent(job: "comments", id: "7", Reason(description: "no value at 'id'"))),
             "1 of 3 parents failed (walked again by the next run); first: job 'comments': parent '7': no value at 'id'"),
            (.store(job: "events", path: "cache/t_event.sqlite", Reason(description: "disk I/O error")),
             "job 'events': cache/t_event.sqlite: disk I/O error"),
            (.open(job: "comments", path: "cache/t_event.sqlite", what: ", its parent's database", Reason(description: "permission denied")),
             "job 'comments': cannot open cache/t_event.sqlite, its parent's database: permission denied"),
        ]
        for (failure, sentence) in failures {
            #expect(failure.description == sentence)
        }
        // verify stores nothing: it says what it walked.
        #expect(failures[0].0.walkedDescription
            == "job 'events': GET https://api.test/events?page=4&key=REDACTED: HTTP 503: HTTP 503 after 3 retries; at page 4, pages 1-3 walked")
        #expect(failures[3].0.walkedDescription == "job 'events': interrupted at page 4; pages 1-3 walked")
        #expect(failures.map(\.0.isInterruption) == [false, false, false, true, true, false, false, false])
        #expect(failures[0].0.page == page)
        #expect(failures[2].0.loop == "next URL seen twice")
    }

    @Test("a walk's ending is read from it by one rule, and gives the run's status and the walk's state")
    func endings() {
        var walk = WalkResult(stop: .emptyPage(page: 3))
        #expect(WalkEnding(walk) == .complete)
        walk.stop = .maxPages(2)
        #expect(WalkEnding(walk) == .incomplete)
        walk.error = .store(job: "events", path: "x.sqlite", Reason(description: "full"))
        walk.stop = .failed
        #expect(WalkEnding(walk) == .failed)
        walk.error = .interrupted(job: "events", page: 2, kept: JobFailure.Kept(first: 1, last: 1))
        walk.stop = .interrupted
        #expect(WalkEnding(walk) == .interrupted)
        walk.error = .deferred(PageFailure(page: 2, method: "GET", url: "https://api.example.com/e?page=2", status: 429,
                                           problem: "Retry-After asks to wait 1h, longer than max_wait 5m"),
                               until: "2026-11-22T21:15:00.000Z", job: "events", kept: JobFailure.Kept(first: 1, last: 1))
        walk.stop = .deferred
        #expect(WalkEnding(walk) == .deferred)
        #expect(walk.error?.description == "job 'events': GET https://api.example.com/e?page=2: HTTP 429: Retry-After asks to "
            + "wait 1h, longer than max_wait 5m; deferred until 2026-11-22T21:15:00.000Z: page 2 not stored, page 1 kept")
        #expect(walk.error?.resumeAfter == "2026-11-22T21:15:00.000Z" && walk.error?.isInterruption == false)
        let endings: [WalkEnding] = [.complete, .incomplete, .failed, .interrupted, .deferred]
        #expect(endings.map(\.status) == [.ok, .ok, .failed, .interrupted, .deferred])
        #expect(endings.map(\.rawValue) == ["complete", "incomplete", "failed", "interrupted", "deferred"])
    }
}
