import Crypto
import Foundation
import GRDB
@testable import MirrorCore
@testable import MirrorDownload
@testable import MirrorJobFile
@testable import MirrorModel
@testable import MirrorStore
@testable import MirrorExport
import MirrorTestSupport
import Synchronization
import Testing

/// The bytes the fixture serves for `/f/<name>`.
private func content(_ name: String) -> [UInt8] {
    Array(String(repeating: "\(name);", count: 40).utf8)
}

private func hex(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

/// Where a URL's file must land, computed independently of the code under test.
private func expectedPath(_ url: String, ext: String?) -> String {
    let hash = hex(Crypto.SHA256.hash(data: Array(url.utf8)))
    return "files/\(hash.prefix(2))/\(hash)" + (ext.map { ".\($0)" } ?? "")
}

/// Waits until the downloads in progress under `output` (`files/.partial`) hold `count`
/// bytes in all: what the client has received and written so far.
private func partialBytes(under output: String, reach count: Int) async {
    let folder = output + "/" + FileNaming.partialFolder
    while !Task.isCancelled {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        let bytes = names.reduce(0) { total, name in
            total + ((try? FileManager.default.attributesOfItem(atPath: folder + "/" + name)[.size] as? Int) ?? 0)
        }
        if bytes >= count { return }
        try? await Task.sleep(for: .milliseconds(5))
    }
}

/// `count` bytes that repeat no short pattern (a linear congruential sequence): a piece
/// written twice, dropped or out of order changes the file and its SHA-256.
private func noise(_ count: Int, seed: UInt32) -> [UInt8] {
    var state = seed
    return (0..<count).map { _ in
        state = state &* 1_664_525 &+ 1_013_904_223
        return UInt8(truncatingIfNeeded: state >> 24)
    }
}

/// Pages of records whose `BASE` stands for the server's own address; files under `/f/`.
/// `/f/pieces*` serves 300,000 bytes of noise chunked in pieces of 700 bytes, `/f/bytes*`
/// 3,000 bytes one byte a chunk.
/// `/f/missing*` answers 404 while `missing` is set; `/f/big*` serves 4 KB chunked,
/// `/f/large*` 4 KB with its length announced; `/f/slow*` stalls after 10 bytes until the
/// server stops; `/f/trickle*` sends 20 bytes, then 20 more for each of `turns`.
/// `/f/long*` serves 700,000 bytes of noise with their length announced; `/f/shrinking*`
/// announces 600,000 bytes and drops the connection after 500,000 the first time, then
/// serves 3,000 whole.
private final class FileAPI: Sendable {
    let pages: [[String]]
    let missing = Mutex(true)
    let gauge = InFlightGauge()
    let delay: Duration
    /// The first `gate` file requests are held until all of them have arrived.
    let gate: Int
    let turns = Turns()
    /// Requests for each file name so far.
    let asked = Mutex([String: Int]())

    init(pages: [[String]], delay: Duration = .zero, gate: Int = 0) {
        self.pages = pages
        self.delay = delay
        self.gate = gate
    }

    func handle(_ request: FixtureRequest) async -> FixtureResponse {
        let base = request.base
        if request.path.hasPrefix("/f/") {
            let entered = gauge.enter()
            defer { gauge.leave() }
            if entered <= gate { await gauge.waitForEntered(gate) }
            if delay > .zero { try? await Task.sleep(for: delay) }
            let name = String(request.path.dropFirst(3))
            if name.hasPrefix("missing"), missing.withLock({ $0 }) {
                return .text("gone", status: 404)
            }
            if name.hasPrefix("pieces") {
                return FixtureResponse(body: noise(300_000, seed: 7), delivery: .chunked(700))
            }
            if name.hasPrefix("long") {
                return FixtureResponse(body: noise(700_000, seed: 5))
            }
            if name.hasPrefix("shrinking") {
                let count = asked.withLock { asked in
                    asked[name, default: 0] += 1
                    return asked[name, default: 0]
                }
                return count == 1 ? FixtureResponse(body: noise(600_000, seed: 3), delivery: .cutShort(at: 500_000))
                    : FixtureResponse(body: noise(3_000, seed: 4))
            }
            if name.hasPrefix("bytes") {
                return FixtureResponse(body: noise(3_000, seed: 11), delivery: .chunked(1))
            }
            if name.hasPrefix("big") {
                return FixtureResponse(body: [UInt8](repeating: 0x41, count: 4096), delivery: .chunked(512))
            }
            if name.hasPrefix("trickle") {
                return FixtureResponse(body: content(name) + [UInt8](repeating: 0x41, count: 20_000),
                                       delivery: .trickle(bytes: 20, pause: { [turns] in await turns.wait() }))
            }
            if name.hasPrefix("slow") {
                return FixtureResponse(body: content(name), delivery: .stall(at: 10))
            }
            if name.hasPrefix("large") {
                return FixtureResponse(body: [UInt8](repeating: 0x41, count: 4096))
            }
            return FixtureResponse(headers: [("Content-Type", "image/jpeg"), ("ETag", "\"\(name)\"")], body: content(name))
        }
        let page = Int(request.parameter("page") ?? "") ?? 0
        return .json(PagedAPI(records: pages).body(page: page).replacingOccurrences(of: "BASE", with: base))
    }
}

private func job(_ extra: String = "") -> String {
    """
    version: 1
    jobs:
      - name: items
        url: "BASE/items?page={page}"
        records: data.list
        id: id
        table: t_item
        downloads: [cover.url, images.*.url, attachments]
        retries: 0
    \(extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
    """
}

private struct FileRow: Equatable, CustomStringConvertible {
    var url: String
    var status: String
    var path: String?
    var size: Int?
    var sha256: String?
    var contentType: String?
    var httpStatus: Int?
    var error: String?
    var description: String { "\(url) \(status) \(path ?? "-") \(size ?? -1) \(httpStatus ?? -1) \(error ?? "")" }
}

private func fileRows(_ harness: Harness) throws -> [FileRow] {
    try harness.database("t_item.sqlite").read { db in
        try Row.fetchAll(db, sql: "SELECT * FROM _mirror_files ORDER BY url").map { row in
            FileRow(url: row["url"], status: row["status"], path: row["path"], size: row["size"], sha256: row["sha256"],
                    contentType: row["content_type"], httpStatus: row["http_status"], error: row["error"])
        }
    }
}

/// Every file under `folder`, relative to it, sorted.
private func tree(_ folder: String) -> [String] {
    let enumerator = FileManager.default.enumerator(atPath: folder)
    var files: [String] = []
    while let path = enumerator?.nextObject() as? String {
        var isFolder: ObjCBool = false
        _ = FileManager.default.fileExists(atPath: folder + "/" + path, isDirectory: &isFolder)
        if !isFolder.boolValue { files.append(path) }
    }
    return files.sorted()
}

@Suite("downloads", .timeLimit(.minutes(6)))
struct DownloadTests {
    @Test("a walk whose records all come from stored copies warns of no downloads path: it read no record")
    func replayedWalkNoWarning() async throws {
        let harness = try Harness()
        let api = FileAPI(pages: [[#"{"id":"1","cover":{"url":"BASE/f/a"},"images":[{"url":"BASE/f/b"}],"attachments":["BASE/f/c"]}"#]])
        try await FixtureServer.with(api.handle) { server in
            let first = try await harness.run(job("refresh_after: 1h\npages: { from: 1, to: 1 }"), server: server)
            // Page 1 is walked from its stored copy; page 2, empty, is fetched.
            let second = try await harness.run(job("refresh_after: 1h\npages: { from: 1, to: 2 }"), server: server)
            #expect(first.jobs[0].files?.downloaded == 3)
            #expect(second.jobs[0].pages.skipped == 1)
            #expect(second.jobs[0].pages.fetched == 1)
            #expect(first.jobs[0].warnings == nil)
            #expect(second.jobs[0].warnings == nil)
        }
    }
    static let pages = [
        [
            #"{"id":1,"cover":{"url":"BASE/f/a.jpg"},"images":[{"url":"BASE/f/b.PNG?size=large"},{"url":"BASE/f/a.jpg"}]}"#,
            #"{"id":2,"cover":{"url":"BASE/f/a.jpg"},"attachments":["BASE/f/c","BASE/f/d.pdf#page=2"]}"#,
        ],
        [
            #"{"id":3,"cover":{"url":"BASE/f/e.txt?name=../../../escape.sh"},"images":[]}"#,
            #"{"id":4,"cover":null,"title":"BASE/f/not-a-download.jpg"}"#,
        ],
    ]

    @Test("files are fetched once each, named by the URL's hash and extension, with size, type and SHA-256 recorded")
    func downloads() async throws {
        let harness = try Harness()
        let api = FileAPI(pages: Self.pages)
        let (summary, base, requests) = try await FixtureServer.with(api.handle) { server in
            let summary = try await harness.run(job(), server: server)
            return (summary, server.base, server.requests.map(\.target))
        }
        let report = summary.jobs[0]
        #expect(report.succeeded)
        let names = ["a.jpg", "b.PNG?size=large", "c", "d.pdf#page=2", "e.txt?name=../../../escape.sh"]
        // A URL that many records name is fetched once; a fragment is not sent.
        #expect(requests.filter { $0.hasPrefix("/f/") }.sorted()
            == ["/f/a.jpg", "/f/b.PNG?size=large", "/f/c", "/f/d.pdf", "/f/e.txt?name=../../../escape.sh"])
        let served = ["a.jpg", "b.PNG", "c", "d.pdf", "e.txt"]
        let extensions: [String?] = ["jpg", "png", nil, "pdf", "txt"]
        var expected: [FileRow] = []
        for (index, name) in names.enumerated() {
            let url = "\(base)/f/\(name)"
            let bytes = content(served[index])
            expected.append(FileRow(url: url, status: "ok", path: expectedPath(url, ext: extensions[index]), size: bytes.count,
                                    sha256: hex(Crypto.SHA256.hash(data: bytes)), contentType: "image/jpeg",
                                    httpStatus: 200, error: nil))
        }
        let rows = try fileRows(harness)
        #expect(rows == expected.sorted { $0.url < $1.url })
        for row in expected {
            #expect(FileManager.default.contents(atPath: harness.output + "/" + row.path!).map { Array($0) }
                == content(served[names.firstIndex { row.url.hasSuffix("/f/" + $0) }!]))
        }
        // Nothing but the databases and the named files, all inside the output folder.
        #expect(tree(harness.folder).filter { !$0.hasPrefix("cache/t_item.sqlite") }
            == (["cache/.mirror.lock", "jobs.yaml"] + expected.map { "cache/" + $0.path! }).sorted())
        #expect(report.files == DownloadSummary(downloaded: 5, bytes: expected.reduce(0) { $0 + $1.size! }, failed: []))
    }

    @Test("a file arriving in many small pieces is written whole, in order, and hashed exactly")
    func manyPieces() async throws {
        let harness = try Harness()
        let api = FileAPI(pages: [[#"{"id":1,"cover":{"url":"BASE/f/pieces.bin"},"attachments":["BASE/f/bytes.bin"]}"#]])
        let base = try await FixtureServer.with(api.handle) { server in
            let summary = try await harness.run(job(), server: server)
            #expect(summary.jobs[0].files == DownloadSummary(downloaded: 2, bytes: 303_000, failed: []))
            return server.base
        }
        let served = ["\(base)/f/bytes.bin": noise(3_000, seed: 11), "\(base)/f/pieces.bin": noise(300_000, seed: 7)]
        let rows = try fileRows(harness)
        #expect(rows.map(\.url) == served.keys.sorted())
        for row in rows {
            let bytes = served[row.url]!
            #expect(row.status == "ok")
            #expect(row.path == expectedPath(row.url, ext: "bin"))
            #expect(row.size == bytes.count)
            #expect(row.sha256 == hex(Crypto.SHA256.hash(data: bytes)))
            #expect(FileManager.default.contents(atPath: harness.output + "/" + row.path!).map { Array($0) } == bytes)
        }
    }

    @Test("a file of 700,000 bytes, its length announced, is written whole, each piece at its offset")
    func longFile() async throws {
        let harness = try Harness()
        let api = FileAPI(pages: [[#"{"id":1,"cover":{"url":"BASE/f/long.bin"}}"#]])
        let base = try await FixtureServer.with(api.handle) { server in
            let summary = try await harness.run(job(), server: server)
            #expect(summary.jobs[0].files == DownloadSummary(downloaded: 1, bytes: 700_000, failed: []))
            return server.base
        }
        let bytes = noise(700_000, seed: 5)
        let rows = try fileRows(harness)
        #expect(rows.map(\.description) == ["\(base)/f/long.bin ok \(expectedPath(base + "/f/long.bin", ext: "bin")) 700000 200 "])
        #expect(rows.first?.sha256 == hex(Crypto.SHA256.hash(data: bytes)))
        #expect(FileManager.default.contents(atPath: harness.output + "/" + expectedPath(base + "/f/long.bin", ext: "bin"))
            .map { Array($0) } == bytes)
    }

    @Test("a retry after a connection cut mid-body writes the file afresh: nothing of the longer first attempt is left")
    func retryShorter() async throws {
        let harness = try Harness()
        let api = FileAPI(pages: [[#"{"id":1,"cover":{"url":"BASE/f/shrinking.bin"}}"#]])
        let base = try await FixtureServer.with(api.handle) { server in
            let summary = try await harness.run(job().replacingOccurrences(of: "retries: 0", with: "retries: 1"), server: server)
            #expect(summary.jobs[0].files == DownloadSummary(downloaded: 1, bytes: 3_000, failed: []))
            return server.base
        }
        #expect(api.asked.withLock { $0 } == ["shrinking.bin": 2])
        let bytes = noise(3_000, seed: 4)
        let rows = try fileRows(harness)
        #expect(rows.map(\.description)
            == ["\(base)/f/shrinking.bin ok \(expectedPath(base + "/f/shrinking.bin", ext: "bin")) 3000 200 "])
        #expect(rows.first?.sha256 == hex(Crypto.SHA256.hash(data: bytes)))
        #expect(FileManager.default.contents(atPath: harness.output + "/" + expectedPath(base + "/f/shrinking.bin", ext: "bin"))
            .map { Array($0) } == bytes)
        #expect(tree(harness.output + "/files") == [String(expectedPath(base + "/f/shrinking.bin", ext: "bin").dropFirst("files/".count))])
    }

    @Test("a URL's extension reads the same byte by byte as character by character")
    func extensions() {
        let urls = [
            "https://a.example/x/photo.JPG", "https://a.example/x/photo.jpeg?size=2#top", "https://a.example/x/archive.tar.gz",
            "https://a.example/x/dir.d/", "https://a.example/x/dir.d//", "https://a.example/x/.hidden", "https://a.example/x/a.",
            "https://a.example/x/a.toolongext", "https://a.example/x/a.12345678", "https://a.example/x/a.b-c",
            "https://a.example", "https://a.example?x=/y.png", "https://a.example#/y.png", "http://a.example/p.PnG?q=1.jpg",
            "//a.example/q.gif", "a.example/q.gif", "/q.webp", "q.webp", "https://a.example/x://y/z.svg", "", "https://a.example/%41.b%43",
            "https://a.example/a.b\r\nc", "https://a.example/a.é", "https://a.example/é/a.png", "https://a.example/a.e\u{301}",
        ]
        for url in urls {
            #expect(FileNaming.fileExtension(of: url) == FileNaming.characterExtension(of: url), "\(url)")
            if url.utf8.allSatisfy({ $0 < 0x80 }) {
                #expect(FileNaming.asciiExtension(of: Array(url.utf8)) == FileNaming.characterExtension(of: url), "\(url)")
            }
        }
        #expect(urls.prefix(4).map(FileNaming.fileExtension(of:)) == ["jpg", "jpeg", "gz", "d"])
    }

    @Test("a file that fails is reported without failing its job, retried by the next run; a complete one is not fetched again")
    func failedThenRetried() async throws {
        let harness = try Harness()
        let api = FileAPI(pages: [[#"{"id":1,"cover":{"url":"BASE/f/a.jpg"},"images":[{"url":"BASE/f/missing.jpg"}]}"#]])
        try await FixtureServer.with(api.handle) { server in
            let first = try await harness.run(job(), server: server)
            let missing = "\(server.base)/f/missing.jpg"
            #expect(first.jobs[0].succeeded)
            #expect(first.jobs[0].files?.failed == [FileFailure(url: missing, error: "HTTP 404")])
            #expect(try fileRows(harness).map { "\($0.status) \($0.httpStatus ?? 0) \($0.error ?? "")" } == ["ok 200 ", "failed 404 HTTP 404"])
            #expect(!FileManager.default.fileExists(atPath: harness.output + "/" + expectedPath(missing, ext: "jpg")))
            let status = try StatusReader.read(folder: harness.output)
            #expect(status.jobs.map(\.files) == [StatusReport.Files(downloaded: 1, bytes: content("a.jpg").count, failed: 1, pending: 0)])

            api.missing.withLock { $0 = false }
            let before = server.requests.count
            let second = try await harness.run(job(), server: server)
            #expect(second.jobs[0].files == DownloadSummary(downloaded: 1, bytes: content("missing.jpg").count, failed: []))
            #expect(server.requests.dropFirst(before).map(\.target).filter { $0.hasPrefix("/f/") } == ["/f/missing.jpg"])
            #expect(try fileRows(harness).map(\.status) == ["ok", "ok"])
            #expect(FileManager.default.contents(atPath: harness.output + "/" + expectedPath(missing, ext: "jpg")).map { Array($0) }
                == content("missing.jpg"))

            // A downloaded file removed from disk is fetched again when a page names it.
            try FileManager.default.removeItem(atPath: harness.output + "/" + expectedPath("\(server.base)/f/a.jpg", ext: "jpg"))
            let third = try await harness.run(job(), server: server, refresh: true)
            #expect(third.jobs[0].files == DownloadSummary(downloaded: 1, bytes: content("a.jpg").count, failed: []))
        }
    }

    @Test("a file over max_file_size is abandoned, announced or not, and leaves nothing behind")
    func oversized() async throws {
        let harness = try Harness()
        let api = FileAPI(pages: [[#"{"id":1,"cover":{"url":"BASE/f/big.bin"},"images":[{"url":"BASE/f/large.jpg"}]}"#]])
        let base = try await FixtureServer.with(api.handle) { server in
            _ = try await harness.run(job("max_file_size: 1KB"), server: server)
            return server.base
        }
        let rows = try fileRows(harness)
        #expect(rows.map(\.description) == [
            "\(base)/f/big.bin failed - -1 200 file over the 1 KB cap",
            "\(base)/f/large.jpg failed - -1 200 file over the 1 KB cap",
        ])
        #expect(tree(harness.output + "/files").isEmpty)
    }

    @Test("a download from which nothing arrives for `timeout` is given up on, leaving nothing behind",
          .timeLimit(.minutes(6)))
    func stalled() async throws {
        let harness = try Harness()
        let time = ManualClock()
        let api = FileAPI(pages: [[#"{"id":1,"cover":{"url":"BASE/f/slow.jpg"}}"#]])
        let (summary, base) = try await FixtureServer.with(api.handle) { server in
            // Only the stall counts here, not the rate (`min_download_rate` has its own test).
            async let run = harness.run(job("timeout: 3s\nmin_download_rate: 0\npages: { from: 1, to: 1 }"), server: server,
                                        clock: time.clock)
            // The head and 10 bytes are in; then 3 s pass with nothing more.
            await partialBytes(under: harness.output, reach: 10)
            time.advance(by: .seconds(3))
            return (try await run, server.base)
        }
        #expect(summary.jobs.map(\.succeeded) == [true], "\(summary.jobs.map(\.error))")
        let rows = try fileRows(harness).map(\.description)
        #expect(rows == ["\(base)/f/slow.jpg failed - -1 200 timed out"])
        #expect(tree(harness.output + "/files").isEmpty)
    }

    @Test("a signal abandons the downloads in flight, leaving nothing of them and their rows pending; the files that ended are recorded",
          .timeLimit(.minutes(6)))
    func stopped() async throws {
        let harness = try Harness()
        let api = FileAPI(pages: [[#"{"id":1,"cover":{"url":"BASE/f/a.jpg"},"attachments":["BASE/f/slow.jpg"]}"#]])
        let (signals, send) = AsyncStream.makeStream(of: Int32.self)
        let (summary, base) = try await FixtureServer.with(api.handle) { server in
            async let run = harness.run(job("timeout: 1h\nmin_download_rate: 0\npages: { from: 1, to: 1 }"), server: server,
                                        signals: .stream(signals))
            // a.jpg is in place, and 10 bytes of slow.jpg, which sends no more.
            let landed = harness.output + "/" + expectedPath(server.base + "/f/a.jpg", ext: "jpg")
            while !FileManager.default.fileExists(atPath: landed) { try await Task.sleep(for: .milliseconds(5)) }
            await partialBytes(under: harness.output, reach: 10)
            send.yield(SIGTERM)
            return (try await run, server.base)
        }
        #expect(summary.signal == SIGTERM)
        #expect(summary.interrupted)
        #expect(summary.jobs[0].files?.downloaded == 1)
        let rows = try fileRows(harness).map(\.description)
        // slow.jpg stays pending, as its page queued it: the next run fetches it first.
        #expect(rows == ["\(base)/f/a.jpg ok \(expectedPath(base + "/f/a.jpg", ext: "jpg")) \(content("a.jpg").count) 200 ",
                         "\(base)/f/slow.jpg pending - -1 -1 "])
        #expect(tree(harness.output + "/files") == [String(expectedPath(base + "/f/a.jpg", ext: "jpg").dropFirst("files/".count))])
    }

    @Test("a download trickling under min_download_rate is given up on once it has run for `timeout`, leaving nothing behind",
          .timeLimit(.minutes(6)))
    func trickle() async throws {
        let harness = try Harness()
        let time = ManualClock()
        let api = FileAPI(pages: [[#"{"id":1,"cover":{"url":"BASE/f/trickle.jpg"}}"#]])
        let (summary, base) = try await FixtureServer.with(api.handle) { server in
            async let run = harness.run(job("timeout: 2s\nmin_download_rate: 1KB\npages: { from: 1, to: 1 }"), server: server,
                                        clock: time.clock)
            // 20 bytes with the head, 20 more a second later; a second after that, the body has
            // run for `timeout` at 20 bytes a second, against a minimum of 1 KB a second, and
            // has never stalled for `timeout`.
            await partialBytes(under: harness.output, reach: 20)
            time.advance(by: .seconds(1))
            api.turns.give()
            await partialBytes(under: harness.output, reach: 40)
            time.advance(by: .seconds(1))
            let summary = try await run
            api.turns.giveAll()
            return (summary, server.base)
        }
        #expect(summary.jobs.map(\.succeeded) == [true], "\(summary.jobs.map(\.error))")
        let rows = try fileRows(harness).map(\.description)
        #expect(rows == ["\(base)/f/trickle.jpg failed - -1 200 too slow: 40 B in 2s, under the 1 KB/s of min_download_rate"])
        #expect(tree(harness.output + "/files").isEmpty)
    }

    @Test("only absolute http and https URLs are fetched; any other is refused and reported")
    func refused() async throws {
        let harness = try Harness()
        let api = FileAPI(pages: [[#"{"id":1,"attachments":["file:///etc/passwd","ftp://example.com/x.jpg","/relative/y.jpg"]}"#]])
        let (summary, requests) = try await FixtureServer.with(api.handle) { server in
            let summary = try await harness.run(job(), server: server)
            return (summary, server.requests.map(\.target))
        }
        let refusal = "not an absolute http(s) URL: refused"
        #expect(summary.jobs[0].files?.failed.sorted { $0.url < $1.url } == [
            FileFailure(url: "/relative/y.jpg", error: refusal),
            FileFailure(url: "file:///etc/passwd", error: refusal),
            FileFailure(url: "ftp://example.com/x.jpg", error: refusal),
        ])
        #expect(try fileRows(harness).map(\.status) == ["refused", "refused", "refused"])
        #expect(requests.allSatisfy { $0.hasPrefix("/items?page=") })
        #expect(!FileManager.default.fileExists(atPath: harness.output + "/files"))
    }

    @Test("download_concurrency downloads are in flight at once", .timeLimit(.minutes(6)))
    func concurrency() async throws {
        let harness = try Harness()
        let record = #"{"id":1,"attachments":[\#((1...12).map { "\"BASE/f/\($0).jpg\"" }.joined(separator: ","))]}"#
        let api = FileAPI(pages: [[record]], delay: .milliseconds(10), gate: 5)
        let summary = try await FixtureServer.with(api.handle) { server in
            return try await harness.run(job("download_concurrency: 5"), server: server)
        }
        #expect(summary.jobs[0].files?.downloaded == 12)
        #expect(api.gauge.most == 5)
    }

    @Test("export --local-files rewrites every downloaded URL to its path; others stay")
    func localFiles() async throws {
        let harness = try Harness()
        let api = FileAPI(pages: [[
            #"{"id":1,"cover":{"url":"BASE/f/a.jpg"},"images":[{"url":"BASE/f/missing.jpg"}],"title":"BASE/f/a.jpg"}"#,
        ]])
        let base = try await FixtureServer.with(api.handle) { server in
            _ = try await harness.run(job(), server: server)
            return server.base
        }
        let a = expectedPath("\(base)/f/a.jpg", ext: "jpg")
        var options = Exporter.Options(table: "t_item")
        options.localFiles = true
        #expect(try harness.export(options) == #"""
            {"id":1,"cover":{"url":"\#(a)"},"images":[{"url":"\#(base)/f/missing.jpg"}],"title":"\#(a)"}

            """#)
        options.format = .csv
        #expect(try harness.export(options) == "account,_id,id,cover,images,title\r\n"
            + #",1,1,"{""url"":""\#(a)""}","[{""url"":""\#(base)/f/missing.jpg""}]",\#(a)"# + "\r\n")
        options.localFiles = false
        options.format = .ndjson
        #expect(try harness.export(options).contains(#""cover":{"url":"\#(base)/f/a.jpg"}"#))
    }

    @Test("a file URL holding a ${…} value is kept as its record holds it, for joins and retries; the summary masks it")
    func secretInFileURL() async throws {
        let harness = try Harness()
        let api = FileAPI(pages: [[#"{"id":1,"cover":{"url":"BASE/f/missing.jpg?port-7Q"}}"#]])
        try await FixtureServer.with(api.handle) { server in
            let yaml = job().replacingOccurrences(of: "url: \"BASE/items?page={page}\"", with: "url: \"BASE/items?page={page}&p=${P}\"")
            let first = try await harness.run(yaml, server: server, environment: ["P": "port-7Q"])
            #expect(first.jobs[0].files?.failed == [FileFailure(url: "\(server.base)/f/missing.jpg?REDACTED", error: "HTTP 404")])
            #expect(try fileRows(harness).map(\.url) == ["\(server.base)/f/missing.jpg?port-7Q"])
            api.missing.withLock { $0 = false }
            let second = try await harness.run(yaml, server: server, environment: ["P": "port-7Q"])
            #expect(second.jobs[0].files?.downloaded == 1)
            #expect(try fileRows(harness).map(\.status) == ["ok"])
        }
    }

    @Test("a file on another origin gets no header holding a secret; one on the API's origin gets every header")
    func headersAcrossOrigins() async throws {
        let harness = try Harness()
        try await FixtureServer.with({ _ in FixtureResponse(body: content("cdn")) }) { cdn in
            let api = FileAPI(pages: [[#"{"id":1,"cover":{"url":"BASE/f/own.jpg"},"attachments":["\#(cdn.base)/cdn.jpg"]}"#]])
            try await FixtureServer.with(api.handle) { server in
                let yaml = job("headers: { X-Key: \"${K}\", X-Plain: plain }")
                let summary = try await harness.run(yaml, server: server, environment: ["K": "k3y-Q7Zp"])
                #expect(summary.jobs[0].files?.downloaded == 2)
                let own = server.requests.filter { $0.path == "/f/own.jpg" }
                #expect(own.map { $0.headers["x-key"] } == ["k3y-Q7Zp"])
                #expect(cdn.requests.map { $0.headers["x-key"] } == [nil])
                #expect(cdn.requests.map { $0.headers["x-plain"] } == ["plain"])
            }
        }
    }

    @Test("a downloaded file cut short on disk is fetched again when a page names it")
    func cutShortOnDisk() async throws {
        let harness = try Harness()
        let api = FileAPI(pages: [[#"{"id":1,"cover":{"url":"BASE/f/a.jpg"}}"#]])
        try await FixtureServer.with(api.handle) { server in
            _ = try await harness.run(job(), server: server)
            let path = harness.output + "/" + expectedPath("\(server.base)/f/a.jpg", ext: "jpg")
            #expect(truncate(path, 10) == 0)
            let again = try await harness.run(job(), server: server, refresh: true)
            #expect(again.jobs[0].files == DownloadSummary(downloaded: 1, bytes: content("a.jpg").count, failed: []))
            #expect(FileManager.default.contents(atPath: path).map { Array($0) } == content("a.jpg"))
        }
    }

    @Test("two jobs downloading into one output folder at once never share a temporary file", .timeLimit(.minutes(6)))
    func twoJobsOneFolder() async throws {
        let harness = try Harness()
        let second = Turns()
        let handler: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
            switch request.path {
            case "/f/first.jpg":
                // The first job's file is held until the second job's is asked for, so that both
                // temporary files exist at once.
                await second.wait()
                return FixtureResponse(body: Array("first".utf8))
            case "/f/second.jpg":
                second.giveAll()
                return FixtureResponse(body: Array("second".utf8))
            default:
                let name = request.path == "/a" ? "first" : "second"
                return .json(#"{"data":{"list":\#(request.parameter("page") == "1" ? #"[{"id":1,"f":"http://\#(request.authority)/f/\#(name).jpg"}]"# : "[]")}}"#)
            }
        }
        let job = """
            version: 1
            jobs:
              - name: a
                url: "BASE/a?page={page}"
                records: data.list
                id: id
                table: t_a
                downloads: [f]
              - name: b
                url: "BASE/b?page={page}"
                records: data.list
                id: id
                table: t_b
                downloads: [f]
            """
        try await FixtureServer.with(handler) { server in
            let summary = try await harness.run(job, server: server)
            #expect(summary.jobs.map { $0.files?.failed.count } == [0, 0])
            #expect(summary.jobs.map { $0.files?.downloaded } == [1, 1])
        }
        for (database, content) in [("t_a.sqlite", "first"), ("t_b.sqlite", "second")] {
            let path = try await harness.database(database).read { db in try String.fetchOne(db, sql: "SELECT path FROM _mirror_files") }
            #expect(FileManager.default.contents(atPath: harness.output + "/" + path!) == Data(content.utf8))
        }
    }
}

@Suite("the folders downloads are written to", .timeLimit(.minutes(6)))
struct FileFoldersTests {
    /// Prepares `name`, writes `bytes` to its temporary file, runs `meanwhile`, then moves the
    /// file into place.
    private func download(_ name: String, _ bytes: String, with folders: FileFolders,
                          meanwhile: () throws -> Void = {}) async throws {
        let temporary = try await folders.prepare(for: name)
        let written = Array(bytes.utf8).withUnsafeBytes { write(temporary.descriptor, $0.baseAddress, $0.count) }
        #expect(written == bytes.utf8.count)
        close(temporary.descriptor)
        try meanwhile()
        do {
            try await folders.place(temporary.name, at: name)
        } catch {
            folders.discard(temporary.name)
            throw error
        }
    }

    private func temporaryFolder() throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mirror-folders-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }

    @Test("a bucket folder removed or moved away while a job downloads is made again for the next file into it",
          arguments: ["removed", "moved"])
    func bucketGone(how: String) async throws {
        let output = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: output) }
        let folders = FileFolders(output: output)
        try await download("files/ab/first.jpg", "first", with: folders)
        try await download("files/ab/second.jpg", "second", with: folders) {
            // Gone after the second file's temporary file was made, before it is moved in.
            if how == "removed" {
                try FileManager.default.removeItem(atPath: output + "/files/ab")
            } else {
                try FileManager.default.moveItem(atPath: output + "/files/ab", toPath: output + "/moved")
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: output + "/files/ab") == ["second.jpg"])
        #expect(FileManager.default.contents(atPath: output + "/files/ab/second.jpg") == Data("second".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: output + "/files/.partial") == [])
        if how == "moved" {
            #expect(try FileManager.default.contentsOfDirectory(atPath: output + "/moved") == ["first.jpg"])
        }
    }

    @Test("a link put in a bucket folder's place while a job downloads fails its files; nothing is written through it")
    func bucketBecomesLink() async throws {
        let output = try temporaryFolder()
        let elsewhere = try temporaryFolder()
        defer {
            try? FileManager.default.removeItem(atPath: output)
            try? FileManager.default.removeItem(atPath: elsewhere)
        }
        let folders = FileFolders(output: output)
        try await download("files/ab/first.jpg", "first", with: folders)
        await #expect(throws: FileFolders.Failure.self) {
            try await download("files/ab/second.jpg", "second", with: folders) {
                try FileManager.default.moveItem(atPath: output + "/files/ab", toPath: output + "/moved")
                try FileManager.default.createSymbolicLink(atPath: output + "/files/ab", withDestinationPath: elsewhere)
            }
        }
        let failure = await #expect(throws: FileFolders.Failure.self) {
            try await download("files/ab/third.jpg", "third", with: folders)
        }
        #expect(failure?.reason.contains("'files/ab' is a symbolic link") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere) == [])
        #expect(try FileManager.default.contentsOfDirectory(atPath: output + "/moved") == ["first.jpg"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: output + "/files/.partial") == [])
    }

    @Test("jobs downloading into one output folder at once share its open folders, which close once none holds them")
    func sharedFolders() {
        let output = "/tmp/mirror-folders-shared"
        weak var released: FileFolders?
        do {
            let first = FileFolders.shared(output: output)
            #expect(FileFolders.shared(output: output + "/") === first)
            #expect(FileFolders.shared(output: "/tmp/mirror-folders-other") !== first)
            released = first
        }
        #expect(released == nil)
    }
}

/// How many are inside at once, and the most there ever were.
private final class Occupancy: Sendable {
    private let counts = Mutex((inside: 0, most: 0))

    func enter() { counts.withLock { $0.inside += 1; $0.most = max($0.most, $0.inside) } }
    func leave() { counts.withLock { $0.inside -= 1 } }
    var now: (inside: Int, most: Int) { counts.withLock { $0 } }
}

@Suite("one download at a time through a turnstile", .timeLimit(.minutes(6)))
struct TurnstileTests {
    @Test("every task passes, one at a time, and none is left waiting")
    func oneAtATime() async {
        let turnstile = Turnstile()
        let occupancy = Occupancy()
        let passed = await withTaskGroup(of: Int.self) { group in
            for number in 0..<64 {
                group.addTask {
                    await turnstile.pass {
                        occupancy.enter()
                        // Long enough for the others to come and wait.
                        usleep(200)
                        occupancy.leave()
                        return number
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(passed.sorted() == Array(0..<64))
        #expect(occupancy.now == (inside: 0, most: 1))
    }
}
