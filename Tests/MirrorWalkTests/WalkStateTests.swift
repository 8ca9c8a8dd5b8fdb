import Foundation
@testable import MirrorHTTP
@testable import MirrorModel
@testable import MirrorWalk
@testable import MirrorJSON
import MirrorJobFile
import MirrorTestSupport
import Testing

/// The walk's decisions without a server, a store or a clock: responses are read by the
/// page reader from bytes, and the state is told what the store did.
@Suite("walk state", .timeLimit(.minutes(6)))
struct WalkStateTests {
    /// The one job of a job file naming `url`, with `keys` added to it.
    func spec(_ keys: String, url: String = "http://api.test/items?page={page}") throws -> JobSpec {
        let folder = try TemporaryFolder()
        let path = folder.path + "/jobs.yaml"
        try """
        version: 1
        jobs:
          - name: items
            url: "\(url)"
            records: data.list
            id: id
            table: t_item
        \(keys.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return try JobFileLoader(environment: [:]).load(path: path).jobs[0]
    }

    func state(_ job: JobSpec, maxPages: Int? = nil) -> WalkState {
        WalkState(job: job, start: WalkStart(startedAt: "t", page: nil, nextURL: nil, cursor: nil, position: 0), maxPages: maxPages)
    }

    /// A response read as the walk reads it.
    func served(_ job: JobSpec, _ target: PageTarget, _ body: String, status: Int = 200) throws -> Fetched {
        let response = HTTPResponse(status: status, headers: ["content-type": "application/json"], body: Array(body.utf8))
        return try PageReader(job: job).read(response, url: target.url, page: target.page, requestBody: "").get()
    }

    func counts(new: Int) -> CommitCounts {
        var counts = CommitCounts()
        counts.new = new
        return counts
    }

    @Test("going past pages before they are stored, then back: the walk is where it was, their rejected and repeated records uncounted")
    func goBack() throws {
        let job = try spec("next: next", url: "http://api.test/items?cursor={cursor}")
        var walk = state(job)
        func body(_ page: Int) -> String {
            // A record without an id, and an id twice.
            #"{"data":{"list":[{"id":"\#(page)a"},{"name":"none"},{"id":"\#(page)b"},{"id":"\#(page)b"}]},"next":"c\#(page + 1)"}"#
        }
        let first = try #require(walk.nextTarget() as PageTarget?)
        let decided = walk.decide(try served(job, first, body(1)), for: first)
        let step = try #require(decided)
        let ended = walk.stored(step, counts: counts(new: 2))
        #expect(!ended)
        let second = try #require(walk.nextTarget() as PageTarget?)
        let result = walk.result
        let position = walk.position

        let decidedSecond = walk.decide(try served(job, second, body(2)), for: second)
        let secondStep = try #require(decidedSecond)
        #expect(walk.mayMoveAhead(secondStep))
        let mark = walk.movedAhead(past: secondStep)
        let third = try #require(walk.peekTarget())
        #expect(third.cursor?.text == "c3")
        let next = walk.nextTarget()
        #expect(next == third)
        let decidedThird = walk.decide(try served(job, third, body(3)), for: third)
        _ = walk.movedAhead(past: try #require(decidedThird))
        #expect(walk.result.pages == 3 && walk.result.rejected.count == 3 && walk.result.lastStored == 3)

        walk.goBack(to: mark)
        let again = walk.nextTarget()
        #expect(again == second)
        #expect(walk.position == position)
        #expect(walk.result.pages == result.pages && walk.result.elementsWalked == result.elementsWalked)
        #expect(walk.result.bytes == result.bytes)
        #expect(walk.result.rejected.count == 1 && walk.result.repeated.count == 1)
        #expect(walk.result.firstStored == 1 && walk.result.lastStored == 1)
        #expect(walk.result.counts.new == 2)
    }

    @Test("a {page} walk goes from..to, checkpointing the next page with each; the last page is complete")
    func pageRange() throws {
        let job = try spec("pages: { from: 3, to: 5 }")
        var walk = state(job)
        #expect(walk.isWindowed && walk.pageLimit == 5)
        var stored: [Int] = []
        while let target = walk.nextTarget() {
            let decided = walk.decide(try served(job, target, #"{"data":{"list":[{"id":"\#(target.page)"}]}}"#), for: target)
            let step = try #require(decided)
            #expect(step.nextPage == (target.page < 5 ? target.page + 1 : nil))
            #expect(step.next?.url.description == (target.page < 5 ? "http://api.test/items?page=\(target.page + 1)" : nil))
            stored.append(target.page)
            if walk.stored(step, counts: counts(new: 1)) { break }
        }
        #expect(stored == [3, 4, 5])
        #expect(walk.result.stop == .endOfPages(page: 5))
        #expect(walk.result.stop.isComplete)
        #expect(walk.result.pages == 3 && walk.result.counts.new == 3 && walk.position == 3)
    }

    @Test("an empty page ends the walk without being stored; a stop status too")
    func emptyAndStatus() throws {
        let job = try spec("stop: { status: [404] }")
        var walk = state(job)
        let next = walk.nextTarget()
        let first = try #require(next)
        let decided = walk.decide(try served(job, first, #"{"data":{"list":[]}}"#), for: first)
        #expect(decided == nil)
        #expect(walk.result.stop == .emptyPage(page: 1))
        #expect(walk.result.pages == 1 && walk.result.firstStored == nil)

        var other = state(job)
        let otherNext = other.nextTarget()
        let target = try #require(otherNext)
        let otherDecided = other.decide(try served(job, target, "gone", status: 404), for: target)
        #expect(otherDecided == nil)
        #expect(other.result.stop == .status(404, page: 1))
    }

    @Test("a cursor seen twice is a loop once its page is stored; cursors differing in bytes only are not")
    func loops() throws {
        let job = try spec("next: data.next", url: "http://api.test/items?c={cursor}")
        var walk = state(job)
        var cursors: [String?] = []
        for cursor in ["caf\\u00e9", "cafe\\u0301", "caf\\u00e9"] {
            let next = walk.nextTarget()
            let target = try #require(next)
            cursors.append(target.cursor?.text)
            let decided = walk.decide(try served(job, target, #"{"data":{"list":[{"id":"\#(cursors.count)"}],"next":"\#(cursor)"}}"#), for: target)
            let step = try #require(decided)
            if walk.stored(step, counts: counts(new: 1)) { break }
        }
        #expect(cursors == [nil, "caf\u{e9}", "cafe\u{301}"])
        #expect(walk.result.error?.loop == "cursor 'caf\u{e9}' seen twice")
        #expect(walk.result.error?.description == "job 'items': GET http://api.test/items?c=cafe%CC%81: loop: cursor 'caf\u{e9}' seen twice; pages 1-3 kept")
        #expect(walk.result.pages == 3)
    }

    @Test("the announced last page ends the walk there; --max-pages ends it as incomplete")
    func lastPageAndMaxPages() throws {
        let job = try spec("stop: { last_page: data.last }")
        var walk = state(job)
        while let target = walk.nextTarget() {
            let decided = walk.decide(try served(job, target, #"{"data":{"list":[{"id":"\#(target.page)"}],"last":2}}"#), for: target)
            let step = try #require(decided)
            if walk.stored(step, counts: counts(new: 1)) { break }
        }
        #expect(walk.result.stop == .lastPage(page: 2))
        #expect(walk.lastAnnounced == 2)

        var capped = state(try spec(""), maxPages: 2)
        #expect(capped.pageLimit == 2)
        while let target = capped.nextTarget() {
            let decided = capped.decide(try served(job, target, #"{"data":{"list":[{"id":"\#(target.page)"}]}}"#), for: target)
            let step = try #require(decided)
            #expect(capped.mayFetchAhead(step) == (target.page < 2))
            if capped.stored(step, counts: counts(new: 1)) { break }
        }
        #expect(capped.result.stop == .maxPages(2))
        #expect(!capped.result.stop.isComplete)
    }

    @Test("stop.known: a page of only known ids ends the walk; nothing is fetched ahead of its commit with one slot")
    func known() throws {
        let job = try spec("stop: { known: true }\nconcurrency: 1")
        var walk = state(job)
        let next = walk.nextTarget()
        let target = try #require(next)
        let decided = walk.decide(try served(job, target, #"{"data":{"list":[{"id":"1"}]}}"#), for: target)
        let step = try #require(decided)
        #expect(!walk.mayFetchAhead(step))
        let ended = walk.stored(step, counts: counts(new: 0))
        #expect(ended)
        #expect(walk.result.stop == .knownPage(page: 1))
    }
}
