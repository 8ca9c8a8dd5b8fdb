import Foundation
import GRDB
import Logging
@testable import MirrorHTTP
@testable import MirrorModel
@testable import MirrorStore
@testable import MirrorWalk
import MirrorTestSupport
import Synchronization
import Testing

/// Pages that are already here when the one before them is stored go into its commit.
@Suite("pages stored together", .timeLimit(.minutes(6)))
struct HeldPagesTests {
    /// 5 pages of 2 records; page 2 is answered only after pages 3-5 were (or after 10 s),
    /// so that when it comes, the pages after it are already here.
    static let pages = PagedAPI(ids: (1...5).map { page in ["\(page)a", "\(page)b"] })

    /// With `etags`, each page has the ETag `"p<page>"` and is answered 304 when asked with it.
    static func answer(_ request: FixtureRequest, answered: Answered, etags: Bool = false) async -> FixtureResponse {
        let page = Int(request.parameter("page") ?? "") ?? 0
        if page == 2 {
            let clock = ContinuousClock()
            let deadline = clock.now.advanced(by: .seconds(10))
            while !answered.pages.withLock({ $0.isSuperset(of: [3, 4, 5]) }), clock.now < deadline, !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(5))
            }
            // Time for the client to read them.
            try? await Task.sleep(for: .milliseconds(300))
        }
        answered.pages.withLock { _ = $0.insert(page) }
        guard etags else { return .json(pages.body(page: page)) }
        let etag = "\"p\(page)\""
        let asked = request.headers["if-none-match"]
        answered.requests.withLock { $0.append("\(page)\(asked == nil ? "" : " if-none-match")") }
        if asked == etag { return FixtureResponse(status: 304, headers: [("ETag", etag)], body: []) }
        return .json(pages.body(page: page), headers: [("ETag", etag)])
    }

    /// The path of `t_item.sqlite` in the harness's output folder, made, and the store of that file.
    static func store(_ harness: Harness) throws -> (path: String, store: TableStore) {
        try FileManager.default.createDirectory(atPath: harness.output, withIntermediateDirectories: true)
        let path = harness.output + "/t_item.sqlite"
        return (path, try TableStore(path: path))
    }

    /// Walks the 5 pages with 4 requests in flight into `store`; what each commit held is in `store.commits`.
    static func walk(_ harness: Harness, server: FixtureServer, store: NotedStore,
                     keys: String = "", url: String = "BASE/items?page={page}",
                     progress: ProgressHandler? = nil) async throws -> WalkResult {
        let job = try harness.load(itemsJob("pages: { from: 1, to: 5 }\nconcurrency: 4\n" + keys, url: url), server: server).jobs[0]
        _ = try await store.store.prepare(table: "t_item")
        let start = try await store.store.startWalk(job: "items", account: "", table: "t_item", at: "2026-11-30T00:00:00Z",
                                                    fresh: false)
        let walker = PageWalker(job: job, store: store, client: HTTPClient(), maxPages: nil, retry: RetryPolicy(baseDelay: 0.01),
                                limiter: RateLimiter(), quota: QuotaPacer(), logger: Logger(label: "test"), progress: progress)
        return await walker.walk(from: start)
    }

    /// Page 1 is stored alone (page 2 is not here yet); pages 2-5 are stored together, [1, 4],
    /// unless a loaded machine read some of pages 3-5 only after page 2: then in more commits,
    /// one of them more than a page.
    static func expectTogether(_ commits: [Int], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(commits.first == 1, sourceLocation: sourceLocation)
        #expect(commits.reduce(0, +) == 5, sourceLocation: sourceLocation)
        #expect(commits.contains { $0 > 1 }, "\(commits)", sourceLocation: sourceLocation)
    }

    /// All 5 pages' records are in the table, in walk order, and the checkpoint is past page 5.
    static func expectAllStored(_ store: NotedStore, _ harness: Harness,
                                sourceLocation: SourceLocation = #_sourceLocation) async throws {
        #expect(try harness.ids() == (1...5).flatMap { ["\($0)a", "\($0)b"] }, sourceLocation: sourceLocation)
        #expect(try await checkpoint(store) == [5, nil, 10], sourceLocation: sourceLocation)
        let positions = try await store.store.pool.read { db in
            try Int.fetchAll(db, sql: "SELECT position FROM t_item ORDER BY id")
        }
        #expect(positions == Array(0 ..< 10), sourceLocation: sourceLocation)
    }

    /// The walk's checkpoint: pages stored, the next page, the next position.
    static func checkpoint(_ store: NotedStore) async throws -> [Int?] {
        try await store.store.pool.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT pages, next_page, position FROM _mirror_walks")
            return [row?["pages"], row?["next_page"], row?["position"]]
        }
    }

    @Test("pages already here when the one before them is stored are stored in its commit, in order, each counted")
    func together() async throws {
        let harness = try Harness()
        let store = NotedStore(try Self.store(harness).store)
        let answered = Answered()
        let reports = Reports()
        let result = try await FixtureServer.with({ await Self.answer($0, answered: answered) }) { server in
            try await Self.walk(harness, server: server, store: store, progress: reports.add)
        }
        Self.expectTogether(store.commits)
        // Each page is reported as it would be stored alone.
        let seen = reports.all
        #expect(seen.map(\.page) == [1, 2, 3, 4, 5])
        #expect(seen.map(\.walk.pages) == [1, 2, 3, 4, 5])
        #expect(seen.map(\.walk.counts.new) == [2, 4, 6, 8, 10])
        #expect(seen.map(\.walk.lastStored) == [1, 2, 3, 4, 5])
        #expect(result.error == nil)
        #expect(result.pages == 5)
        #expect(result.counts.new == 10)
        try await Self.expectAllStored(store, harness)
    }

    @Test("pages of a walk that `stop.known: since` ends are stored together too; `known: page` stores each alone",
          arguments: ["since", "page"])
    func knownStops(_ known: String) async throws {
        let harness = try Harness()
        let store = NotedStore(try Self.store(harness).store)
        let answered = Answered()
        let result = try await FixtureServer.with({ await Self.answer($0, answered: answered) }) { server in
            try await Self.walk(harness, server: server, store: store,
                                keys: "incremental: page\nstop: { known: \(known) }", url: "BASE/items?page={page}&since={since}")
        }
        #expect(result.error == nil && result.pages == 5 && result.counts.new == 10)
        #expect(try harness.ids() == (1...5).flatMap { ["\($0)a", "\($0)b"] })
        if known == "since" {
            Self.expectTogether(store.commits)
        } else {
            #expect(store.commits == [1, 1, 1, 1, 1])
        }
    }

    @Test("a page stored together with others that cannot be stored fails the walk there: the pages before it stay, the walk resumes at it")
    func failsInTheMiddle() async throws {
        let harness = try Harness()
        let store = NotedStore(try Self.store(harness).store)
        _ = try await store.store.prepare(table: "t_item")
        try await store.store.pool.write { db in
            try db.execute(sql: """
                CREATE TRIGGER refuse BEFORE INSERT ON t_item WHEN NEW.id = '4a'
                BEGIN SELECT RAISE(ABORT, 'the disk is full'); END
                """)
        }
        let answered = Answered()
        let (result, base) = try await FixtureServer.with({ await Self.answer($0, answered: answered) }) { server in
            (try await Self.walk(harness, server: server, store: store), server.base)
        }
        Self.expectTogether(store.commits)
        let error = try #require(result.error)
        #expect("\(error)".hasPrefix("job 'items': GET \(base)/items?page=4: HTTP 200: cannot store the page: "))
        #expect("\(error)".contains("the disk is full"))
        #expect("\(error)".hasSuffix("; page 4 not stored, pages 1-3 kept"))
        #expect(result.pages == 3)
        #expect(result.counts.new == 6)
        #expect(try harness.ids() == (1...3).flatMap { ["\($0)a", "\($0)b"] })
        #expect(try await Self.checkpoint(store) == [3, 4, 6])
        let stored = try await store.store.pool.read { db in
            try Int.fetchAll(db, sql: "SELECT page FROM _mirror_pages ORDER BY page")
        }
        #expect(stored == [1, 2, 3])
    }

    /// Walks the 5 pages twice with the same server, whose pages have ETags: the second walk
    /// asks each with `If-None-Match` and gets 304. `between` runs between the two walks;
    /// returns the second walk's result, the store it committed to and what it reported.
    static func walkTwice(between: (TableStore) async throws -> Void = { _ in }) async throws
        -> (result: WalkResult, store: NotedStore, reports: [JobProgress], requests: [String], harness: Harness) {
        let harness = try Harness()
        let table = try Self.store(harness).store
        let answered = AnsweredNow()
        let answer: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
            await Self.answer(request, answered: answered.current, etags: true)
        }
        let again = NotedStore(table)
        let reports = Reports()
        let result = try await FixtureServer.with(answer) { server in
            let first = try await Self.walk(harness, server: server, store: NotedStore(table))
            #expect(first.error == nil && first.pages == 5 && first.counts.new == 10)
            try await between(table)
            answered.next()
            return try await Self.walk(harness, server: server, store: again, progress: reports.add)
        }
        return (result, again, reports.all, answered.current.requests.withLock { $0 }, harness)
    }

    @Test("stored copies seen again (304) are stored together, as fetched pages are, each counted")
    func replaysTogether() async throws {
        let (result, store, reports, requests, harness) = try await Self.walkTwice()
        Self.expectTogether(store.commits)
        #expect(requests.sorted() == (1...5).map { "\($0) if-none-match" })
        #expect(reports.map(\.page) == [1, 2, 3, 4, 5])
        #expect(reports.map(\.walk.pages) == [1, 2, 3, 4, 5])
        #expect(reports.map(\.walk.counts.unchanged) == [2, 4, 6, 8, 10])
        #expect(result.error == nil)
        #expect(result.pages == 5 && result.pagesNotModified == 5)
        #expect(result.counts.new == 0 && result.counts.unchanged == 10)
        try await Self.expectAllStored(store, harness)
    }

    @Test("a stored copy lacking records, seen again with others, is fetched again whole; those before it stay, those after it are walked again")
    func replayLacksRecords() async throws {
        let (result, store, _, requests, harness) = try await Self.walkTwice { table in
            try await table.pool.write { db in try db.execute(sql: "DELETE FROM t_item WHERE id = '4a'") }
        }
        #expect(store.commits.first == 1)
        #expect(store.commits.contains { $0 > 1 }, "\(store.commits)")
        // Pages 1-3 were asked once; page 4 a second time without its ETag, and page 5 after it again.
        #expect(requests.filter { $0 < "4" }.sorted() == ["1 if-none-match", "2 if-none-match", "3 if-none-match"])
        #expect(requests.filter { $0.hasPrefix("4") } == ["4 if-none-match", "4"])
        #expect(requests.filter { $0.hasPrefix("5") } == ["5 if-none-match", "5 if-none-match"])
        #expect(requests.last == "5 if-none-match")
        #expect(result.error == nil)
        #expect(result.pages == 5 && result.pagesNotModified == 4)
        #expect(result.counts.new == 1 && result.counts.unchanged == 9)
        try await Self.expectAllStored(store, harness)
    }

    @Test("pages stored in one call are one transaction, each page whole or not at all")
    func oneTransaction() async throws {
        let harness = try Harness()
        let (path, store) = try Self.store(harness)
        _ = try await store.prepare(table: "t_item")
        _ = try await store.startWalk(job: "items", account: "", table: "t_item", at: "2026-11-30T00:00:00Z", fresh: true)
        let begun = try walCommits(path)
        func page(_ number: Int, ids: [String]) -> PageCommit {
            var builder = PageRecords.Builder(capacity: 0, count: ids.count)
            for id in ids {
                Array(id.utf8).withUnsafeBufferPointer { bytes in
                    builder.append(id: bytes) { $0.append(contentsOf: #"{"id":"\#(id)"}"#.utf8) }
                }
            }
            return PageCommit(
                job: "items", account: "", table: "t_item",
                url: RedactedURL(real: "http://127.0.0.1:1/items?page=\(number)", redactor: Redactor(secrets: [])),
                requestBody: "", page: number, status: 200, responseBytes: 100, records: builder.records,
                envelope: PageEnvelope(text: Array(#"{"list":[]}"#.utf8), recordsAt: 9), elements: ids.count,
                onChange: .replace, firstPosition: 2 * (number - 1), nextPage: number + 1, time: "2026-11-30T00:00:00Z")
        }
        let all = await store.commit([page(1, ids: ["a", "b"]), page(2, ids: ["c", "a"]), page(3, ids: ["d", "e"])].map(PageWrite.fresh))
        #expect(all.failure == nil)
        #expect(all.stored.map { [$0.new, $0.unchanged] } == [[2, 0], [1, 1], [2, 0]])
        #expect(try walCommits(path) == begun + 1)

        try await store.pool.write { db in
            try db.execute(sql: """
                CREATE TRIGGER refuse BEFORE INSERT ON t_item WHEN NEW.id = 'h'
                BEGIN SELECT RAISE(ABORT, 'the disk is full'); END
                """)
        }
        let some = await store.commit([page(4, ids: ["f"]), page(5, ids: ["g", "h"]), page(6, ids: ["i"])].map(PageWrite.fresh))
        #expect(some.stored.map(\.new) == [1])
        #expect(some.failure?.contains("the disk is full") == true)
        #expect(try walCommits(path) == begun + 3)
        let (ids, next) = try await store.pool.read { db in
            (try String.fetchAll(db, sql: "SELECT id FROM t_item ORDER BY id"),
             try Int.fetchOne(db, sql: "SELECT next_page FROM _mirror_walks"))
        }
        #expect(ids == ["a", "b", "c", "d", "e", "f"])
        #expect(next == 5)
    }
}

/// The progress a walk reported.
final class Reports: Sendable {
    private let reports = Mutex<[JobProgress]>([])
    var all: [JobProgress] { reports.withLock { $0 } }
    func add(_ progress: JobProgress) { reports.withLock { $0.append(progress) } }
}

/// The pages a fixture server answered, and with `etags` each request: its page, and
/// whether it came with `If-None-Match`.
final class Answered: Sendable {
    let pages = Mutex<Set<Int>>([])
    let requests = Mutex<[String]>([])
}

/// The `Answered` of the walk being made: a fixture server that answers two walks notes
/// each walk's answers apart.
final class AnsweredNow: Sendable {
    private let answered = Mutex(Answered())

    var current: Answered { answered.withLock { $0 } }

    func next() {
        answered.withLock { $0 = Answered() }
    }
}

/// A `TableStore` that notes how many pages each commit held.
final class NotedStore: PageStore {
    let store: TableStore
    private let noted = Mutex<[Int]>([])

    init(_ store: TableStore) {
        self.store = store
    }

    var commits: [Int] { noted.withLock { $0 } }

    func commit(_ page: PageCommit) async throws -> CommitCounts {
        noted.withLock { $0.append(1) }
        return try await store.commit(page)
    }

    func commit(_ pages: [PageWrite]) async -> PagesCommitted {
        noted.withLock { $0.append(pages.count) }
        return await store.commit(pages)
    }

    func replay(_ replay: PageReplay) async throws -> CommitCounts {
        noted.withLock { $0.append(1) }
        return try await store.replay(replay)
    }

    func storedPage(job: String, account: String, url: String, requestBody: String) async throws -> MirrorModel.StoredPage? {
        try await store.storedPage(job: job, account: account, url: url, requestBody: requestBody)
    }

    func keepEndPage(_ page: EndPage) async throws { try await store.keepEndPage(page) }
}

/// The transactions in the WAL of the database at `path`: its frames that end one (a
/// frame's header says the database's size after a commit, 0 before).
private func walCommits(_ path: String) throws -> Int {
    let wal = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path + "-wal")))
    func number(_ at: Int) -> Int { wal[at ..< at + 4].reduce(0) { $0 << 8 | Int($1) } }
    guard wal.count >= 32 else { return 0 }
    let pageSize = number(8)
    let salts = wal[16 ..< 24]
    var commits = 0
    var frame = 32
    while frame + 24 + pageSize <= wal.count, wal[frame + 8 ..< frame + 16] == salts {
        if number(frame + 4) != 0 { commits += 1 }
        frame += 24 + pageSize
    }
    return commits
}
