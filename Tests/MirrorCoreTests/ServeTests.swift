import AsyncHTTPClient
import Crypto
import Foundation
import GRDB
import Logging
@testable import MirrorDownload
@testable import MirrorHTTP
@testable import MirrorJobFile
@testable import MirrorModel
@testable import MirrorServe
@testable import MirrorStore
@testable import MirrorExport
import MirrorFiles
import MirrorTestSupport
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

/// An answer of the server, read whole.
struct Got {
    let status: Int
    let headers: [String: String]
    let body: [UInt8]
    var text: String { String(decoding: body, as: UTF8.self) }
}

func get(_ url: String, headers: [(String, String)] = [], method: NIOHTTP1.HTTPMethod = .GET, body: [UInt8]? = nil) async throws -> Got {
    var request = HTTPClientRequest(url: url)
    request.method = method
    if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
    for (name, value) in headers { request.headers.add(name: name, value: value) }
    let response = try await AsyncHTTPClient.HTTPClient.shared.execute(request, timeout: .seconds(60))
    let body = try await response.body.collect(upTo: 1 << 24)
    var fields: [String: String] = [:]
    for field in response.headers { fields[field.name.lowercased()] = field.value }
    return Got(status: Int(response.status.code), headers: fields, body: Array(body.readableBytesView))
}

/// Serves the harness's output folder while `body` runs, given the server's base URL.
func serving<T: Sendable>(_ harness: Harness, _ body: (String) async throws -> T) async throws -> T {
    try await MirrorServer(options: { var options = MirrorServer.Options(output: harness.output); options.port = 0; return options }())
        .with(logger: Logger(label: "serve", factory: { _ in SwiftLogNoOpLogHandler() })) { port in
            try await body("http://127.0.0.1:\(port)")
        }
}

/// Runs a job whose one record names the file `/f/NAME`, which the fixture server sends as
/// `content` (with `contentType`, when given); the downloaded file's path in the output folder.
func download(_ name: String, _ content: [UInt8], contentType: String? = nil, into harness: Harness) async throws -> String {
    let handler: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
        if request.path == "/f/" + name {
            return FixtureResponse(headers: contentType.map { [("Content-Type", $0)] } ?? [], body: content)
        }
        return .json(PagedAPI(records: [[#"{"id":"1","f":"http://\#(request.authority)/f/\#(name)"}"#]])
            .body(page: Int(request.parameter("page") ?? "") ?? 0))
    }
    return try await FixtureServer.with(handler) { server in
        _ = try await harness.run(itemsJob("downloads: [f]"), server: server)
        return FileNaming.relativePath(for: "\(server.base)/f/" + name)
    }
}

@Suite("mirror serve", .timeLimit(.minutes(6)))
struct ServeTests {
    @Test("a table with generated columns: the read API lists them, and export --format csv writes them, not the fields")
    func columns() async throws {
        let harness = try Harness()
        let api = EditableAPI([[#"{"id":"1","venue":{"city":"Oslo, Norway"},"price":12,"rating":4.5}"#,
                                #"{"id":"2","venue":{"city":"Bergen"},"price":"7","rating":3}"#,
                                #"{"id":"3","price":30}"#]])
        let columns = """
            columns:
              city: { path: venue.city, type: text, index: true }
              price: { path: price, type: integer }
              rating: { path: rating, type: real }
            """
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(itemsJob(columns), server: server)
        }
        var options = Exporter.Options(table: "t_item")
        options.format = .csv
        // A string where an integer was declared, a path that leads nowhere: empty cells.
        #expect(try harness.export(options) == "account,id,city,price,rating\r\n"
            + ",1,\"Oslo, Norway\",12,4.5\r\n,2,Bergen,,3.0\r\n,3,,30,\r\n")
        try await serving(harness) { base in
            let tables = try await get(base + "/_mirror/tables")
            let decoded = try JSONSerialization.jsonObject(with: Data(tables.body)) as? [String: [[String: Any]]]
            let listed = try #require(decoded?["tables"]?.first?["columns"] as? [[String: Any]])
            #expect(listed.map { "\($0["name"]!) \($0["declared_type"] ?? "-") \($0["indexed"]!)" }
                == ["city TEXT 1", "price - 0", "rating - 0"])
        }
    }

    @Test("the read API: tables, records as export chooses them with a link to the next, the change feed, errors")
    func readAPI() async throws {
        let harness = try Harness()
        let api = EditableAPI([[#"{"id":"1","n":12345678901234567890123}"#, #"{"id":"2"}"#, #"{"id":"10"}"#]])
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(itemsJob(), server: server)
        }
        try await serving(harness) { base in
            let tables = try await get(base + "/_mirror/tables")
            #expect(tables.status == 200 && tables.headers["content-type"] == "application/json")
            #expect(tables.text.contains(#""database" : "t_item.sqlite""#) && tables.text.contains(#""records" : 3"#)
                && tables.text.contains(#""last_result" : "ok""#))
            let first = try await get(base + "/_mirror/tables/t_item?limit=2")
            #expect(first.text == "[\n{\"id\":\"1\",\"n\":12345678901234567890123},\n{\"id\":\"2\"}\n]\n")
            #expect(first.headers["link"] == #"</_mirror/tables/t_item?limit=2&offset=2>; rel="next""#)
            let next = try await get(base + "/_mirror/tables/t_item?limit=2&offset=2")
            #expect(next.text == "[\n{\"id\":\"10\"}\n]\n" && next.headers["link"] == nil)
            #expect(try await get(base + "/_mirror/tables/t_item?order=id&since_id=1").text
                == "[\n{\"id\":\"10\"},\n{\"id\":\"2\"}\n]\n")
            let changes = try await get(base + "/_mirror/changes/t_item?since=2")
            let feed = try harness.changes(since: 0).feed
            #expect(changes.text == "{\"changes\":[\n{\"seq\":3,\"op\":\"upsert\",\"account\":\"\",\"id\":\"10\",\"record\":{\"id\":\"10\"}}\n],\n"
                + "\"feed\":\"\(feed)\",\"changes_through\":3}\n")
            let gone = try await get(base + "/_mirror/changes/t_item?since=9")
            #expect(gone.status == 410)
            #expect(gone.text == #"{"error":"the change feed of 't_item' ends at seq 3, before 9: the database was made again since that mark was taken; take a new snapshot"}"# + "\n")
            let bad = try await get(base + "/_mirror/tables/t_item?limit=x")
            #expect(bad.status == 400 && bad.text == #"{"error":"'limit' must be a whole number, not 'x'"}"# + "\n")
            let missing = try await get(base + "/_mirror/tables/t_nope")
            #expect(missing.status == 404 && missing.text.hasPrefix(#"{"error":"no table 't_nope' in '"#))
            let status = try await get(base + "/_mirror/status")
            #expect(status.status == 200 && status.text.contains(#""job" : "items""#))
            #expect(try await get(base + "/elsewhere").status == 404)
            let page = try await get(base + "/")
            #expect(page.status == 200 && page.headers["content-type"] == "text/html; charset=utf-8")
            #expect(page.text.contains(#"<tr class="ok"><td data-label="job">items</td><td data-label="table">t_item</td><td data-label="last run">"#))
            #expect(page.text.contains(#"</td><td data-label="result">ok</td><td data-label="records">3</td><td data-label="files">–</td><td data-label="failure"></td></tr>"#))
            #expect(page.text.contains("<p>1 job, 1 table, 3 records; 0 failed, 0 deferred, 0 stale. As of "))
            #expect(#"<script>"a" & 'b'</script>"#.markupEscaped
                == "&lt;script&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/script&gt;")
            // A name that points here by DNS rebinding gets nothing.
            let rebound = try await get(base + "/_mirror/tables", headers: [("Host", "evil.example:80")])
            #expect(rebound.status == 403)
            #expect(try await get(base + "/_mirror/tables", headers: [("Host", "localhost")]).status == 200)
        }
    }

    @Test("the status page in a real browser: a phone-sized screenshot, and the text of every job")
    func statusPageInBrowser() async throws {
        let harness = try Harness()
        try await FixtureServer.with { request in
            request.path == "/broken" ? .text("down for maintenance", status: 503)
                : .json(PagedAPI(ids: [["1", "2"]]).body(page: Int(request.parameter("page") ?? "") ?? 0))
        } _: { server in
            _ = try await harness.run(itemsJob() + """

                  - name: broken
                    url: "BASE/broken?page={page}"
                    records: data.list
                    id: id
                    table: t_broken
                    retries: 0
                """, server: server)
        }
        let browser = try #require(Browser.find(), Browser.missing)
        try await serving(harness) { base in
            let screenshot = harness.folder + "/status.png"
            _ = try await browser.run(["--window-size=412,915", "--screenshot=\(screenshot)", base + "/"])
            let png = Array(try Data(contentsOf: URL(fileURLWithPath: screenshot)))
            #expect(png.prefix(8) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
            // IHDR: the width and height the page was drawn at, big-endian.
            let size = [16, 20].map { at in png[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) } }
            #expect(size == [412, 915])
            // A blank page compresses to a few KB; text and coloured cards do not.
            #expect(png.count > 10_000)
            let dom = try await browser.run(["--dump-dom", base + "/"])
            let rows = dom.components(separatedBy: "<tr class=").dropFirst().map { row in
                row.components(separatedBy: "<td data-label=").dropFirst().map { cell in
                    String(cell.drop { $0 != ">" }.dropFirst().prefix { $0 != "<" })
                        .replacingOccurrences(of: "&amp;", with: "&").replacingOccurrences(of: "&#39;", with: "'")
                }
            }
            #expect(rows.count == 2)
            let ok = try #require(rows.first { $0.first == "items" })
            #expect(ok.count == 7 && ok[1] == "t_item" && ok[2].hasPrefix("20") && Array(ok[3...]) == ["ok", "2", "–", ""])
            let failed = try #require(rows.first { $0.first == "broken" })
            #expect(Array(failed.prefix(2)) == ["broken", "t_broken"] && Array(failed[3...5]) == ["failed (stale)", "0", "–"])
            #expect(failed[6].hasPrefix("job 'broken': GET ") && failed[6].contains("HTTP 503"))
            #expect(dom.contains("2 jobs, 2 tables, 2 records; 1 failed, 0 deferred, 1 stale. As of "))
            #expect(dom.contains(#"<tr class="failed"><td data-label="job">broken</td>"#))
        }
    }

    @Test("files: type, ETag and 304, ranges, and nothing outside the index or the output folder")
    func files() async throws {
        let harness = try Harness()
        let content = Array((0..<300).map { UInt8($0 % 251) })
        let path = try await download("a.jpg", content, contentType: "image/jpeg", into: harness)
        let sha = Crypto.SHA256.hash(data: content).map { String(format: "%02x", $0) }.joined()
        // A file under files/ that no index names, and a link to a file outside.
        try Data("not indexed".utf8).write(to: URL(fileURLWithPath: harness.output + "/files/stray.txt"))
        try Data("secret".utf8).write(to: URL(fileURLWithPath: harness.folder + "/secret.txt"))
        try FileManager.default.createSymbolicLink(atPath: harness.output + "/files/link.txt",
                                                   withDestinationPath: harness.folder + "/secret.txt")
        try await serving(harness) { base in
            let url = base + "/_mirror/" + path
            let whole = try await get(url)
            #expect(whole.status == 200 && whole.body == content)
            #expect(whole.headers["content-type"] == "image/jpeg" && whole.headers["etag"] == "\"\(sha)\"")
            #expect(whole.headers["x-content-type-options"] == "nosniff" && whole.headers["content-security-policy"] == "sandbox")
            let cached = try await get(url, headers: [("If-None-Match", "\"\(sha)\"")])
            #expect(cached.status == 304 && cached.body.isEmpty && cached.headers["content-type"] == nil
                && cached.headers["etag"] == "\"\(sha)\"")
            // Weakly compared, as a replayed page's is: a cache that marked the tag weak still gets 304.
            let weak = try await get(url, headers: [("If-None-Match", "\"other\", W/\"\(sha)\"")])
            #expect(weak.status == 304 && weak.body.isEmpty)
            let other = try await get(url, headers: [("If-None-Match", "\"other\", W/\"x\(sha)\"")])
            #expect(other.status == 200 && other.body == content)
            let head = try await get(url, method: .HEAD)
            #expect(head.status == 200 && head.body.isEmpty && head.headers["content-length"] == "300")
            let huge = try await get(url, headers: [("Range", "bytes=290-9223372036854775807")])
            #expect(huge.status == 206 && huge.body == Array(content[290...]))
            let junk = try await get(url, headers: [("Range", "bytes=-abc")])
            #expect(junk.status == 200 && junk.body == content)
            let part = try await get(url, headers: [("Range", "bytes=10-19")])
            #expect(part.status == 206 && part.body == Array(content[10..<20]) && part.headers["content-range"] == "bytes 10-19/300")
            let tail = try await get(url, headers: [("Range", "bytes=-5")])
            #expect(tail.status == 206 && tail.body == Array(content.suffix(5)))
            let outside = try await get(url, headers: [("Range", "bytes=300-")])
            #expect(outside.status == 416 && outside.headers["content-range"] == "bytes */300")
            for escape in ["files/stray.txt", "files/link.txt", "files/../../secret.txt", "files/%2e%2e/%2e%2e/secret.txt",
                           "files/..%2f..%2fsecret.txt", "files/", "files"] {
                let answer = try await get(base + "/_mirror/" + escape)
                #expect(answer.status == 404, "\(escape)")
                #expect(answer.text.hasPrefix("{\"error\":\"no "), "\(escape)")
            }
            // The indexed file itself replaced by a link to a file outside: not followed.
            try FileManager.default.removeItem(atPath: harness.output + "/" + path)
            try FileManager.default.createSymbolicLink(atPath: harness.output + "/" + path,
                                                       withDestinationPath: harness.folder + "/secret.txt")
            let linked = try await get(url)
            #expect(linked.status == 404 && linked.body != Array("secret".utf8))
        }
    }

    @Test("files: one larger than what is read at once goes in pieces, whole or by a range across them; a smaller range at once")
    func largeFile() async throws {
        let harness = try Harness()
        let size = ServedFiles.readWhole + 40_000
        let content: [UInt8] = (0 ..< size).map { (index: Int) -> UInt8 in UInt8(truncatingIfNeeded: index * 7 + index / 251) }
        let path = try await download("big.bin", content, into: harness)
        try await serving(harness) { base in
            let url = base + "/_mirror/" + path
            let whole = try await get(url)
            #expect(whole.status == 200 && whole.headers["content-length"] == String(size) && whole.body == content)
            // Across the 64 KB pieces, and longer than what is read at once.
            let across = try await get(url, headers: [("Range", "bytes=65000-\(size - 2)")])
            #expect(across.status == 206 && across.body == Array(content[65000 ..< size - 1])
                && across.headers["content-range"] == "bytes 65000-\(size - 2)/\(size)")
            let short = try await get(url, headers: [("Range", "bytes=-70000")])
            #expect(short.status == 206 && short.body == Array(content.suffix(70000)))
            let head = try await get(url, method: .HEAD)
            #expect(head.status == 200 && head.body.isEmpty && head.headers["content-length"] == String(size))
        }
    }

    @Test("files: a database that comes into the folder while it is served is found at the next request, and one that leaves is not")
    func filesOfDatabasesThatComeAndGo() async throws {
        let downloaded = try Harness()
        let content = Array((0..<300).map { UInt8($0 % 251) })
        let path = try await download("a.jpg", content, contentType: "image/jpeg", into: downloaded)
        let harness = try Harness()
        try FileManager.default.createDirectory(atPath: harness.output, withIntermediateDirectories: true)
        let manager = FileManager.default
        try await serving(harness) { base in
            let url = base + "/_mirror/" + path
            let before = try await get(url)
            #expect(before.status == 404 && before.text == #"{"error":"no downloaded file '\#(path)'"}"# + "\n")
            // The files first, then the database: the moment it is in place, it is asked.
            try manager.moveItem(atPath: downloaded.output + "/files", toPath: harness.output + "/files")
            for name in ["t_item.sqlite-wal", "t_item.sqlite-shm", "t_item.sqlite"]
            where manager.fileExists(atPath: downloaded.output + "/" + name) {
                try manager.moveItem(atPath: downloaded.output + "/" + name, toPath: harness.output + "/" + name)
            }
            let found = try await get(url)
            #expect(found.status == 200 && found.body == content && found.headers["content-type"] == "image/jpeg")
            try manager.moveItem(atPath: harness.output + "/t_item.sqlite", toPath: harness.folder + "/t_item.sqlite")
            let gone = try await get(url)
            #expect(gone.status == 404)
            try manager.moveItem(atPath: harness.folder + "/t_item.sqlite", toPath: harness.output + "/t_item.sqlite")
            let back = try await get(url)
            #expect(back.status == 200 && back.body == content)
        }
    }

    @Test("files: each answer is the file as the index and the disk hold it now: removed, put back anew, retyped, unlisted")
    func filesAsTheyAreNow() async throws {
        let harness = try Harness()
        let content = Array((0..<300).map { UInt8($0 % 251) })
        let path = try await download("a.jpg", content, contentType: "image/jpeg", into: harness)
        let onDisk = harness.output + "/" + path
        let database = try DatabaseQueue(path: harness.output + "/t_item.sqlite")
        try await serving(harness) { base in
            let url = base + "/_mirror/" + path
            for _ in 0 ..< 2 {
                let first = try await get(url)
                #expect(first.status == 200 && first.body == content && first.headers["content-type"] == "image/jpeg")
            }
            // Removed by hand: gone at once, though the index still lists it.
            try FileManager.default.moveItem(atPath: onDisk, toPath: harness.folder + "/a.jpg")
            let removed = try await get(url)
            #expect(removed.status == 404)
            // Another file renamed into its place: its bytes, not the ones first sent.
            let other = Array(repeating: UInt8(7), count: 120)
            try Data(other).write(to: URL(fileURLWithPath: harness.folder + "/other.jpg"))
            try FileManager.default.moveItem(atPath: harness.folder + "/other.jpg", toPath: onDisk)
            let replaced = try await get(url)
            #expect(replaced.status == 200 && replaced.body == other && replaced.headers["content-length"] == "120")
            // The index changed by another program: its type from the next answer on.
            try await database.write { db in
                try db.execute(sql: "UPDATE _mirror_files SET content_type = 'image/png' WHERE path = ?", arguments: [path])
            }
            let retyped = try await get(url)
            #expect(retyped.status == 200 && retyped.headers["content-type"] == "image/png" && retyped.body == other)
            try await database.write { db in
                try db.execute(sql: "UPDATE _mirror_files SET status = 'failed' WHERE path = ?", arguments: [path])
            }
            let unlisted = try await get(url)
            #expect(unlisted.status == 404)
        }
    }

    @Test("files kept open: no more than the limit, each kept only at the moment it was found at, all let go at the next")
    func openedFilesLimitAndMoment() throws {
        let harness = try Harness()
        try FileManager.default.createDirectory(atPath: harness.output, withIntermediateDirectories: true)
        let watcher = CommitWatcher(output: harness.output)
        let before = try #require(watcher.moment())
        try DatabaseQueue(path: harness.output + "/t.sqlite").write { db in try db.execute(sql: "CREATE TABLE t (a)") }
        let after = try #require(watcher.moment())
        #expect(before != after)
        let null = try FileSystem.openForReading("/dev/null")
        let found = ServedFiles.Found(entry: FileLookup.Entry(sha256: "00", contentType: nil), file: ServedFiles.OpenFile(null),
                                      path: "/dev/null", opened: try #require(FileStatus(descriptor: null)))
        let opened = OpenedFiles(limit: 2)
        #expect(opened.found("files/a", at: before) == nil)
        for name in ["files/a", "files/b", "files/c"] { opened.keep(found, as: name, at: before) }
        #expect(opened.count == 2)
        let kept = ["files/a", "files/b", "files/c"].filter { opened.found($0, at: before) != nil }
        #expect(kept.count == 2 && kept.contains("files/c"))
        // Found at a moment that has passed: not kept.
        #expect(opened.found("files/a", at: after) == nil && opened.count == 0)
        opened.keep(found, as: "files/a", at: before)
        #expect(opened.count == 0)
        opened.keep(found, as: "files/a", at: after)
        #expect(opened.found("files/a", at: after)?.path == "/dev/null")
    }

    @Test("an API's own header named as serve's sendfile field is replayed as it came, with the page, kept or not")
    func apiHeaderOfSendfileName() async throws {
        let harness = try Harness()
        let api: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            return .json(PagedAPI(records: [[#"{"id":"1"}"#]]).body(page: page), headers: [("Mirror-Sendfile", "1")])
        }
        _ = try await FixtureServer.with(api) { server in try await harness.run(itemsJob(), server: server) }
        for cache in [MirrorServer.defaultPageCache, 0] {
            var options = MirrorServer.Options(output: harness.output)
            options.port = 0
            options.pageCache = cache
            try await MirrorServer(options: options).with(logger: Logger(label: "serve", factory: { _ in SwiftLogNoOpLogHandler() })) { port in
                for _ in 0 ..< 2 {
                    let page = try await get("http://127.0.0.1:\(port)/items?page=1")
                    #expect(page.status == 200 && page.headers["mirror-sendfile"] == "1", "\(cache)")
                    #expect(page.text.contains(#"{"id":"1"}"#), "\(cache): \(page.text)")
                }
            }
        }
    }

    @Test("a request that names an arrival of its own in serve's field is answered as of when it came: a run before it is seen")
    func arrivalNamedByClient() async throws {
        let harness = try Harness()
        let value = Mutex("a")
        let api: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            let record = #"{"id":"1","v":"\#(value.withLock { $0 })"}"#
            return .json(PagedAPI(records: [[record]]).body(page: page))
        }
        try await FixtureServer.with(api) { server in
            _ = try await harness.run(itemsJob(), server: server)
            try await serving(harness) { base in
                let kept = try await get(base + "/items?page=1")
                #expect(kept.status == 200 && kept.text.contains(#""v":"a""#), "\(kept.text)")
                value.withLock { $0 = "b" }
                _ = try await harness.run(itemsJob(), server: server)
                // An instant before every moment serve has taken: were it believed, the page
                // kept before the run would be current for this request.
                let named = try await get(base + "/items?page=1", headers: [("Mirror-Arrival", "1")])
                #expect(named.status == 200 && named.text.contains(#""v":"b""#), "\(named.text)")
            }
        }
    }

    @Test("files: If-Range keeps a range for the file's own strong tag only; 304, 404 and 416 as they are sent")
    func fileConditions() async throws {
        let harness = try Harness()
        let content = Array((0..<300).map { UInt8($0 % 251) })
        let path = try await download("a.svg", content, contentType: "image/svg+xml", into: harness)
        let etag = "\"" + Crypto.SHA256.hash(data: content).map { String(format: "%02x", $0) }.joined() + "\""
        try await serving(harness) { base in
            let url = base + "/_mirror/" + path
            let part = try await get(url, headers: [("Range", "bytes=10-19"), ("If-Range", etag)])
            #expect(part.status == 206 && part.body == Array(content[10..<20]))
            #expect(part.headers["content-range"] == "bytes 10-19/300" && part.headers["content-length"] == "10")
            // Another version's tag, a weak tag or a date: the whole file, as it is now.
            for ifRange in ["\"other\"", "W/" + etag, "Wed, 21 Oct 2015 07:28:00 GMT"] {
                let whole = try await get(url, headers: [("Range", "bytes=10-19"), ("If-Range", ifRange)])
                #expect(whole.status == 200 && whole.body == content, "\(ifRange)")
                #expect(whole.headers["content-range"] == nil && whole.headers["content-length"] == "300", "\(ifRange)")
                #expect(whole.headers["etag"] == etag && whole.headers["content-type"] == "image/svg+xml", "\(ifRange)")
            }
            // A range outside the file holds only for the file's own tag.
            let ignored = try await get(url, headers: [("Range", "bytes=300-"), ("If-Range", "\"other\"")])
            #expect(ignored.status == 200 && ignored.body == content)
            let outside = try await get(url, headers: [("Range", "bytes=300-"), ("If-Range", etag)])
            #expect(outside.status == 416 && outside.headers["content-range"] == "bytes */300")
            #expect(outside.headers["content-type"] == "application/json" && outside.headers["x-content-type-options"] == nil)
            #expect(outside.text == #"{"error":"the range 'bytes=300-' is outside the file's 300 bytes"}"# + "\n")
            let head = try await get(url, headers: [("Range", "bytes=-5")], method: .HEAD)
            #expect(head.status == 206 && head.body.isEmpty && head.headers["content-length"] == "5"
                && head.headers["content-range"] == "bytes 295-299/300")
            // A 304, to the file's weak tag or to any: the file's headers but its type, and no body.
            for ifNoneMatch in ["W/" + etag, "*"] {
                let cached = try await get(url, headers: [("If-None-Match", ifNoneMatch)])
                #expect(cached.status == 304 && cached.body.isEmpty, "\(ifNoneMatch)")
                #expect(cached.headers["etag"] == etag && cached.headers["accept-ranges"] == "bytes"
                    && cached.headers["x-content-type-options"] == "nosniff" && cached.headers["content-security-policy"] == "sandbox"
                    && cached.headers["content-type"] == nil, "\(ifNoneMatch)")
            }
            let missing = try await get(base + "/_mirror/files/nope.svg")
            #expect(missing.status == 404 && missing.headers["content-type"] == "application/json")
            #expect(missing.headers["x-content-type-options"] == nil && missing.headers["content-security-policy"] == nil)
            #expect(missing.text == #"{"error":"no downloaded file 'files/nope.svg'"}"# + "\n")
        }
    }

    @Test("a run writing while the server answers is not blocked, and is seen a whole page at a time",
          .timeLimit(.minutes(6)))
    func runWhileServing() async throws {
        let harness = try Harness()
        let gate = Latch()
        let pages = (1...6).map { page in (1...10).map { "\(page * 100 + $0)" } }
        let handler: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            if page == 4 { await gate.wait() }
            return .json(PagedAPI(ids: pages).body(page: page))
        }
        try FileManager.default.createDirectory(atPath: harness.output, withIntermediateDirectories: true)
        try await FixtureServer.with(handler) { server in
            try await serving(harness) { base in
                func stored() async throws -> Int {
                    let answer = try await get(base + "/_mirror/tables/t_item?limit=10000")
                    return answer.status == 200 ? answer.text.split(separator: "\n").count - 2 : 0
                }
                let ended = Mutex(false)
                let run = Task {
                    defer { ended.withLock { $0 = true } }
                    return try await harness.run(itemsJob("concurrency: 1"), server: server)
                }
                // The walk waits before page 4: three pages are stored, and every answer holds exactly them.
                while try await stored() < 30 {
                    if ended.withLock({ $0 }), try await stored() < 30 {
                        let summary = try await run.value
                        Issue.record("the run ended before it stored three pages: \(summary.jobs.map { $0.error ?? "no error" })")
                        return
                    }
                    try await Task.sleep(for: .milliseconds(5))
                }
                var counts: [Int] = []
                for _ in 0..<10 { counts.append(try await stored()) }
                #expect(counts == Array(repeating: 30, count: 10))
                gate.release()
                let summary = try await run.value
                #expect(summary.jobs[0].status == .ok && summary.jobs[0].records.new == 60)
                #expect(try await stored() == 60)
            }
        }
    }

    @Test("an address already listened on is said plainly")
    func portTaken() async throws {
        let harness = try Harness()
        try await serving(harness) { base in
            let port = Int(base.split(separator: ":").last!)!
            var options = MirrorServer.Options(output: harness.output)
            options.port = port
            let failure = await #expect(throws: MirrorServer.ListenFailure.self) {
                try await MirrorServer(options: options).with(logger: Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() })) { _ in }
            }
            #expect(failure?.description == "cannot listen on 127.0.0.1:\(port): the port is taken: another program listens "
                + "on it (--port another one, or 0 for any free one)")
        }
    }
}

/// Debian's headless Chromium, run as a command: `MIRROR_BROWSER`, else `chromium` or
/// `chromium-browser` on the PATH.
struct Browser {
    static let missing: Comment = "no chromium: apt-get install chromium (scripts/test.sh does), or name one in MIRROR_BROWSER"

    let path: String

    static func find() -> Browser? {
        let environment = ProcessInfo.processInfo.environment
        if let named = environment["MIRROR_BROWSER"] { return Browser(path: named) }
        for folder in (environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            for name in ["chromium", "chromium-browser"] where FileManager.default.isExecutableFile(atPath: "\(folder)/\(name)") {
                return Browser(path: "\(folder)/\(name)")
            }
        }
        return nil
    }

    /// Runs the browser headless with `arguments`; its standard output, once it exits 0.
    func run(_ arguments: [String]) async throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        let profile = NSTemporaryDirectory() + "mirror-browser-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: profile) }
        process.arguments = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                             "--user-data-dir=\(profile)"] + arguments
        // A file, not a pipe: a pipe that fills up would stop the browser before it exits.
        let outputPath = profile + ".out"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        process.standardOutput = FileHandle(forWritingAtPath: outputPath)
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        // Waited for without blocking a thread the server's requests need.
        let status = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int32, any Error>) in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: outputPath)), as: UTF8.self)
        #expect(status == 0, "\(path) \(arguments) exited with \(status)")
        return text
    }
}
