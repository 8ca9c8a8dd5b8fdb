import Crypto
import Foundation
import GRDB
@testable import MirrorDownload
@testable import MirrorJobFile
@testable import MirrorModel
@testable import MirrorStore
@testable import MirrorExport
@testable import MirrorReplay
@testable import MirrorServe
import Logging
import MirrorTestSupport
import Synchronization
import Testing

/// A flag the test opens; a handler waits on it.
final class Latch: Sendable {
    private let open = Mutex(false)

    func release() { open.withLock { $0 = true } }

    func wait() async {
        while !open.withLock({ $0 }), !Task.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
    }
}

/// Every byte under `folder`, file by file.
private func allBytes(under folder: String) throws -> [(path: String, bytes: [UInt8])] {
    let names = FileManager.default.enumerator(atPath: folder)?.compactMap { $0 as? String } ?? []
    return try names.sorted().compactMap { name in
        var isFolder: ObjCBool = false
        let path = folder + "/" + name
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), !isFolder.boolValue else { return nil }
        return (name, Array(try Data(contentsOf: URL(fileURLWithPath: path))))
    }
}

private func sha256(_ bytes: [UInt8]) -> String {
    Crypto.SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
}

private extension Array where Element == UInt8 {
    func contains(_ text: String) -> Bool {
        let needle = Array(text.utf8)
        guard needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { start in self[start..<(start + needle.count)].elementsEqual(needle) }
    }
}

/// Jobs `north` and `south` storing `/north` and `/south` into `t_item`, each under its own
/// account, downloading the files at `downloads`.
func twoAccountsJob(downloads: String) -> String {
    ["north", "south"].reduce("version: 1\njobs:\n") { yaml, account in
        yaml + """
              - name: \(account)
                url: "BASE/\(account)?page={page}"
                records: data.list
                id: id
                table: t_item
                account: \(account)
                downloads: [\(downloads)]

            """
    }
}

/// A replayed page's answer as `ReplayedPages` gives it, for an app at `origin`: status,
/// headers in order, body.
private struct Replayed: Equatable {
    let status: Int
    let headers: [String]
    let body: [UInt8]

    init(_ pages: ReplayedPages, _ target: String, origin: String) throws {
        switch try pages.answer(method: "GET", target: target, body: [], origin: origin, ifNoneMatch: nil) {
        case let .whole(status, headers, body):
            (self.status, self.headers, self.body) = (status, headers.map { "\($0.0): \($0.1)" }, body)
        case let .kept(entry, _):
            let kept = entry.answer as? KeptBytes
            (status, headers, body) = (entry.status, kept?.headers.map { "\($0.0): \($0.1)" } ?? [], kept?.body ?? [])
        case let .streamed(status, headers, page):
            defer { page.finish() }
            var body = page.first
            var cursor = PageStream.Cursor()
            while !cursor.done { body += try page.piece(&cursor) }
            (self.status, self.headers, self.body) = (status, headers.map { "\($0.0): \($0.1)" }, body + page.last)
        }
    }
}

@Suite("snapshots", .timeLimit(.minutes(6)))
struct SnapshotTests {
    @Test("a snapshot taken while a run writes is one committed state: whole pages, its feed's mark, no WAL")
    func consistentWhileRunning() async throws {
        let harness = try Harness()
        let latch = Latch()
        let pages = (1...8).map { page in (1...10).map { "\(page * 100 + $0)" } }
        let handler: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            // The walk waits before page 5 until the test has taken its snapshots.
            if page == 5 { await latch.wait() }
            return .json(PagedAPI(ids: pages).body(page: page))
        }
        let all = pages.flatMap { $0 }
        try await FixtureServer.with(handler) { server in
            let run = Task { try await harness.run(itemsJob("concurrency: 1"), server: server) }
            // Four pages stored: the run is now waiting for page 5.
            func stored() async throws -> Int {
                guard FileManager.default.fileExists(atPath: harness.output + "/t_item.sqlite") else { return 0 }
                return try await harness.database("t_item.sqlite").read { db in
                    try db.tableExists("t_item") ? try Int.fetchOne(db, sql: "SELECT count(*) FROM t_item") ?? 0 : 0
                }
            }
            while try await stored() < 40 {
                try await Task.sleep(for: .milliseconds(5))
            }
            var taken: [SnapshotWriter.Written] = [try await harness.snapshot("mid")]
            #expect(taken[0].manifest.databases.map(\.tables) == [[SnapshotManifest.Table(name: "t_item", records: 40)]])
            latch.release()
            // Snapshots keep being taken while the rest of the walk is stored.
            var number = 0
            while taken.last!.manifest.databases[0].tables[0].records < 80, number < 500 {
                number += 1
                taken.append(try await harness.snapshot("during-\(number)"))
            }
            let summary = try await run.value
            #expect(summary.jobs[0].records.new == 80)
            taken.append(try await harness.snapshot("end"))
            for written in taken {
                let database = written.manifest.databases[0]
                let records = database.tables[0].records
                // Whole pages only, their records in walk order, and the feed's mark of that state.
                #expect(records % 10 == 0)
                #expect(database.changesThrough == records)
            }
            #expect(taken.last!.manifest.databases[0].tables[0].records == 80)
            for name in ["mid", "end"] + (1...number).map({ "during-\($0)" }) {
                let folder = harness.folder + "/" + name
                #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted() == ["manifest.json", "t_item.sqlite"])
                let copy = try DatabaseQueue(path: folder + "/t_item.sqlite")
                try await copy.read { db in
                    #expect(try String.fetchOne(db, sql: "PRAGMA integrity_check") == "ok")
                    #expect(try String.fetchOne(db, sql: "PRAGMA journal_mode") == "delete")
                    let ids = try String.fetchAll(db, sql: "SELECT id FROM t_item ORDER BY position")
                    #expect(ids == Array(all.prefix(ids.count)))
                    #expect(try Int.fetchOne(db, sql: "SELECT changes_through FROM _mirror_snapshot WHERE table_name = 't_item'")
                        == ids.count)
                    // Nothing of the bookkeeping.
                    #expect(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
                        == ["_mirror_files", "_mirror_snapshot", "t_item"])
                }
                try copy.close()
            }
            #expect(try Harness.rows(harness.folder + "/mid/t_item.sqlite").map { $0[1] } == Array(all.prefix(40)).sorted())
        }
    }

    @Test("--account copies one account's rows and files and nothing of another's, byte for byte")
    func oneAccount() async throws {
        let harness = try Harness()
        let handler: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
            switch request.path {
            case "/north":
                return .json(PagedAPI(records: [[
                    #"{"id":"n1","note":"NORTHERN-LIGHTS","cover":{"url":"BASE/f/n1.jpg"}}"#,
                    #"{"id":"both","note":"NORTHERN-TWIN","cover":{"url":"BASE/f/shared.jpg"}}"#,
                ]]).body(page: Int(request.parameter("page") ?? "") ?? 0)
                    .replacingOccurrences(of: "BASE", with: "http://\(request.authority)"))
            case "/south":
                return .json(PagedAPI(records: [[
                    #"{"id":"s1","note":"SOUTHERN-CROSS","cover":{"url":"BASE/f/s1.jpg"}}"#,
                    #"{"id":"both","note":"SOUTHERN-TWIN","cover":{"url":"BASE/f/shared.jpg"}}"#,
                ]]).body(page: Int(request.parameter("page") ?? "") ?? 0)
                    .replacingOccurrences(of: "BASE", with: "http://\(request.authority)"))
            default:
                let name = request.path.split(separator: "/").last.map(String.init) ?? ""
                return FixtureResponse(headers: [("Content-Type", "image/jpeg")], body: Array("bytes of \(name.uppercased())".utf8))
            }
        }
        let job = twoAccountsJob(downloads: "cover.url")
        try await FixtureServer.with(handler) { server in
            let summary = try await harness.run(job, server: server)
            #expect(summary.jobs.map(\.records.new) == [2, 2])
            let written = try await harness.snapshot("north", account: "north", withFiles: true)
            #expect(written.manifest.account == "north")
            #expect(written.manifest.databases.map(\.tables) == [[SnapshotManifest.Table(name: "t_item", records: 2)]])
            let north = ["n1.jpg", "shared.jpg"].map { "\(server.base)/f/\($0)" }.map(FileNaming.relativePath(for:)).sorted()
            #expect(written.manifest.files.map(\.path) == north)
            for file in written.manifest.files {
                let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: harness.folder + "/north/" + file.path)))
                #expect(file.sha256 == sha256(bytes) && file.bytes == bytes.count)
            }
            let rows = try Harness.rows(harness.folder + "/north/t_item.sqlite")
            #expect(rows.map { $0[0] + "/" + $0[1] } == ["north/both", "north/n1"])
            let southFile = FileNaming.relativePath(for: "\(server.base)/f/s1.jpg")
            let southHash = String(southFile.split(separator: "/").last!.prefix(64))
            for (path, bytes) in try allBytes(under: harness.folder + "/north") {
                for secret in ["south", "SOUTH", "s1.jpg", "S1.JPG", southHash] {
                    #expect(!bytes.contains(secret), "\(path) holds '\(secret)'")
                }
            }
            #expect(try allBytes(under: harness.folder + "/north").contains { $0.bytes.contains("NORTHERN-LIGHTS") })
            // The database's SHA-256 in the manifest is the file's.
            let database = Array(try Data(contentsOf: URL(fileURLWithPath: harness.folder + "/north/t_item.sqlite")))
            #expect(written.manifest.databases[0].sha256 == sha256(database) && written.manifest.databases[0].bytes == database.count)

            // Without --account, both accounts and all three files; without --with-files, the index only.
            let whole = try await harness.snapshot("whole")
            #expect(whole.manifest.account == nil && whole.manifest.files == [])
            #expect(try Harness.rows(harness.folder + "/whole/t_item.sqlite").map { $0[0] + "/" + $0[1] }
                == ["north/both", "north/n1", "south/both", "south/s1"])
            let indexed = try await DatabaseQueue(path: harness.folder + "/whole/t_item.sqlite").read { db in
                try String.fetchAll(db, sql: "SELECT path FROM _mirror_files ORDER BY path")
            }
            #expect(indexed == (north + [southFile]).sorted())
            #expect(try FileManager.default.contentsOfDirectory(atPath: harness.folder + "/whole").sorted()
                == ["manifest.json", "t_item.sqlite"])
        }
    }

    @Test("--with-files leaves out, with a warning, a file not on disk as indexed, and one behind a link")
    func filesNotOnDisk() async throws {
        let harness = try Harness()
        let handler: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
            if request.path.hasPrefix("/f/") { return FixtureResponse(body: Array("file \(request.path)".utf8)) }
            let base = "http://\(request.authority)"
            return .json(PagedAPI(records: [[
                #"{"id":"1","f":"\#(base)/f/a.jpg"}"#, #"{"id":"2","f":"\#(base)/f/b.jpg"}"#, #"{"id":"3","f":"\#(base)/f/c.jpg"}"#,
            ]]).body(page: Int(request.parameter("page") ?? "") ?? 0))
        }
        var paths: [String] = []
        try await FixtureServer.with(handler) { server in
            _ = try await harness.run(itemsJob("downloads: [f]"), server: server)
            paths = ["a", "b", "c"].map { FileNaming.relativePath(for: "\(server.base)/f/\($0).jpg") }
        }
        let manager = FileManager.default
        try manager.removeItem(atPath: harness.output + "/" + paths[0])
        // c's bucket folder becomes a link to a folder outside, holding a file of the same name and size.
        let outside = harness.folder + "/outside"
        let bucket = harness.output + "/" + Paths.parent(of: paths[2])
        try manager.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try manager.moveItem(atPath: harness.output + "/" + paths[2], toPath: outside + "/" + (paths[2] as NSString).lastPathComponent)
        if Paths.parent(of: paths[1]) != Paths.parent(of: paths[2]) {
            try manager.removeItem(atPath: bucket)
            try manager.createSymbolicLink(atPath: bucket, withDestinationPath: outside)
        }
        let written = try await harness.snapshot("snap", withFiles: true)
        #expect(written.manifest.files.map(\.path) == [paths[1]])
        #expect(written.warnings.contains("'\(paths[0])' is in the file index but not on disk: left out"))
        #expect(written.warnings.count == 2)
        let indexed = try await DatabaseQueue(path: harness.folder + "/snap/t_item.sqlite").read { db in
            try String.fetchAll(db, sql: "SELECT path FROM _mirror_files")
        }
        #expect(indexed == [paths[1]])
        #expect(manager.contents(atPath: harness.folder + "/snap/" + paths[1]) == Data("file /f/b.jpg".utf8))
    }

    @Test("--with-pages: a snapshot answers every page of the API as the output folder does; without it none; with --account none of another's")
    func withPages() async throws {
        let harness = try Harness()
        let kept = KeptAnswers()
        let secret = "pg-s3cr3t-77"
        try await FixtureServer.with(kept.keeping { request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            let account = String(request.path.dropFirst())
            let next = "\(request.base)\(request.path)?page=\(page + 1)&key=\(secret)"
            let body = PagedAPI(ids: [["\(account)-1", "\(account)-2"], ["\(account)-3"]])
                .body(page: page, extra: #","next":"\#(next)","help":"https://elsewhere.example/\#(account)""#)
            return FixtureResponse(headers: [("Content-Type", "application/json"), ("Link", "<\(next)>; rel=\"next\"")],
                                   body: Array(body.utf8))
        }) { server in
            let jobs = ["north", "south"].reduce("version: 1\njobs:\n") { yaml, account in
                yaml + """
                      - name: \(account)
                        url: "BASE/\(account)?page={page}&key=${KEY}"
                        records: data.list
                        id: id
                        table: t_item
                        account: \(account)

                    """
            }
            let summary = try await harness.run(jobs, server: server, environment: ["KEY": secret])
            #expect(summary.jobs.map(\.records.new) == [3, 3], "\(summary.jobs.map { $0.error ?? "no error" })")
        }
        let plain = try await harness.snapshot("plain")
        let paged = try await harness.snapshot("paged", withPages: true)
        let north = try await harness.snapshot("north", account: "north", withPages: true)
        #expect(plain.manifest.databases.map(\.pages) == [false])
        #expect(paged.manifest.databases.map(\.pages) == [true] && north.manifest.databases.map(\.pages) == [true])
        // Each account's two pages of records and the empty one that ended its walk; pages
        // asked for ahead of the end were not stored.
        let targets = kept.all.map(\.request).filter { Int($0.parameter("page") ?? "")! <= 3 }
            .map { $0.target.replacingOccurrences(of: secret, with: "other") }.sorted()
        #expect(targets == ["/north?page=1&key=other", "/north?page=2&key=other", "/north?page=3&key=other",
                            "/south?page=1&key=other", "/south?page=2&key=other", "/south?page=3&key=other"])
        let app = "http://device.local"
        func answers(_ folder: String) throws -> [Replayed] {
            let pages = ReplayedPages(output: folder, cache: PageCache(limit: 0))
            return try targets.map { try Replayed(pages, $0, origin: app) }
        }
        let output = try answers(harness.output)
        #expect(output.map(\.status) == [200, 200, 200, 200, 200, 200])
        #expect(String(decoding: output[0].body, as: UTF8.self) == #"{"data":{"list":[{"id":"north-1","page":1},"#
            + #"{"id":"north-2","page":1}],"page":1,"next":"http://device.local/north?page=2&key=REDACTED","#
            + #""help":"https://elsewhere.example/north"}}"#)
        #expect(try answers(harness.folder + "/paged") == output)
        #expect(try answers(harness.folder + "/plain").map(\.status) == [404, 404, 404, 404, 404, 404])
        let northern = try answers(harness.folder + "/north")
        #expect(Array(northern.prefix(3)) == Array(output.prefix(3)))
        #expect(northern.suffix(3).map(\.status) == [404, 404, 404])
        #expect(try await DatabaseQueue(path: harness.folder + "/paged/t_item.sqlite").read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        } == ["_mirror_files", "_mirror_pages", "_mirror_snapshot", "t_item"])
        // The secret is nowhere in a snapshot, nor another account in one account's.
        for name in ["plain", "paged", "north"] {
            expectNoSecret([secret], in: try allBytes(under: harness.folder + "/" + name).map { ($0.path, $0.bytes) })
        }
        expectNoSecret(["south"], in: try allBytes(under: harness.folder + "/north").map { ($0.path, $0.bytes) })

        // `mirror serve` on the snapshot, over HTTP: the same answers, and the snapshot as it was.
        var options = MirrorServer.Options(output: harness.folder + "/paged")
        options.port = 0
        try await MirrorServer(options: options).with(logger: Logger(label: "serve", factory: { _ in SwiftLogNoOpLogHandler() })) { port in
            let base = "http://127.0.0.1:\(port)"
            let pages = ReplayedPages(output: harness.output, cache: PageCache(limit: 0))
            for target in targets {
                let got = try await get(base + target)
                let expected = try Replayed(pages, target, origin: base)
                #expect(got.status == expected.status && got.body == expected.body, "\(target)")
                for header in expected.headers {
                    let colon = try #require(header.firstRange(of: ": "))
                    #expect(got.headers[header[..<colon.lowerBound].lowercased()] == String(header[colon.upperBound...]),
                            "\(target): \(header)")
                }
            }
        }
        let database = Array(try Data(contentsOf: URL(fileURLWithPath: harness.folder + "/paged/t_item.sqlite")))
        #expect(sha256(database) == paged.manifest.databases[0].sha256)
        #expect(try FileManager.default.contentsOfDirectory(atPath: harness.folder + "/paged").sorted()
            == ["manifest.json", "t_item.sqlite"])
    }
}

extension JSONDecoder {
    static var snakeCase: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }
}
