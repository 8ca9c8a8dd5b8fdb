import Crypto
import Foundation
import InMemoryLogging
import Logging
import MirrorDownload
import MirrorModel
@testable import MirrorServe
import MirrorTestSupport
import Testing

private let quiet = Logger(label: "serve", factory: { _ in SwiftLogNoOpLogHandler() })

/// A line of a device token file for `token`, hashed.
private func line(_ name: String, _ token: String, accounts: String, tables: String) -> String {
    let hash = SHA256.hash(data: Array(token.utf8)).map { String(format: "%02x", $0) }.joined()
    return #"{"name":"\#(name)","sha256":"\#(hash)","accounts":\#(accounts),"tables":\#(tables)}"# + "\n"
}

@Suite("mirror serve with device tokens", .timeLimit(.minutes(6)))
struct ServeDeviceTokenTests {
    @Test("a token of one account gets that account's pages and records alone, through every route; other scopes 403, none or a wrong one 401, a removed one 401 after a reload")
    func scopes() async throws {
        let harness = try Harness()
        let handler: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
            if request.path.hasPrefix("/f/") { return FixtureResponse(body: Array("bytes".utf8)) }
            let who = String(request.path.dropFirst())
            return .json(PagedAPI(records: [[#"{"id":"\#(who)","f":"http://\#(request.authority)/f/\#(who).jpg"}"#]])
                .body(page: Int(request.parameter("page") ?? "") ?? 0))
        }
        var file = ""
        try await FixtureServer.with(handler) { server in
            _ = try await harness.run(twoAccountsJob(downloads: "f"), server: server)
            file = FileNaming.relativePath(for: "\(server.base)/f/south.jpg")
        }
        let tokens = harness.folder + "/devices.jsonl"
        let everything = line("office", "office-token", accounts: #""*""#, tables: #""*""#)
        let north = line("kiosk-north", "north-token", accounts: #"["north"]"#, tables: #"["t_item"]"#)
        let elsewhere = line("kiosk-other", "other-token", accounts: #"["north"]"#, tables: #"["t_other"]"#)
        try ("# devices\n" + everything + north + elsewhere).write(toFile: tokens, atomically: true, encoding: .utf8)
        var options = MirrorServer.Options(output: harness.output)
        options.port = 0
        options.deviceTokens = tokens
        let (reloads, reload) = AsyncStream.makeStream(of: Void.self)
        var capture = InMemoryLogHandler()
        capture.logLevel = .trace
        let logger = Logger(label: "serve", factory: { [capture] _ in capture })
        try await MirrorServer(options: options).with(logger: logger, reloads: reloads) { port in
            let base = "http://127.0.0.1:\(port)"
            func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer \(token)")] }
            let refused = #"{"error":"this token may not read that: ask with a token of its account and table"}"# + "\n"
            let routes = ["/", "/_mirror/status", "/_mirror/tables", "/_mirror/tables/t_item", "/_mirror/tables/t_item?account=south",
                          "/_mirror/tables/t_nope?account=north", "/_mirror/changes/t_item?since=0&account=south",
                          "/_mirror/changes/t_nope?since=0&account=north", "/south?page=1", "/nowhere?page=1",
                          "/_mirror/" + file, "/_mirror/files/f/none.jpg", "/_mirror/nothing"]
            for route in routes {
                let none = try await get(base + route)
                #expect(none.status == 401 && none.headers["www-authenticate"] == "Bearer", "\(route)")
                #expect(none.text == #"{"error":"a device token is needed: send it as Authorization: Bearer TOKEN"}"# + "\n")
                let wrong = try await get(base + route, headers: bearer("guess"))
                #expect(wrong.status == 401 && wrong.headers["www-authenticate"] == #"Bearer error="invalid_token""#, "\(route)")
                #expect(wrong.text == #"{"error":"this device token is not one of this server's"}"# + "\n")
                let other = try await get(base + route, headers: bearer("north-token"))
                #expect(other.status == 403 && other.text == refused, "\(route)")
                let otherTable = try await get(base + route, headers: bearer("other-token"))
                #expect(otherTable.status == 403 && otherTable.text == refused, "\(route)")
            }
            // North's own records, changes and pages.
            let records = try await get(base + "/_mirror/tables/t_item?account=north", headers: bearer("north-token"))
            #expect(records.status == 200 && records.text.hasPrefix("[\n{\"id\":\"north\""))
            let changes = try await get(base + "/_mirror/changes/t_item?since=0&account=north", headers: bearer("north-token"))
            #expect(changes.status == 200 && changes.text.contains(#""account":"north""#) && !changes.text.contains("south"))
            let page = try await get(base + "/north?page=1", headers: bearer("north-token"))
            #expect(page.status == 200 && page.text.contains(#""id":"north""#))
            // The office's token of every account and table reads everything.
            for route in ["/", "/_mirror/status", "/_mirror/tables", "/_mirror/tables/t_item", "/south?page=1", "/_mirror/" + file] {
                #expect(try await get(base + route, headers: bearer("office-token")).status == 200, "\(route)")
            }
            #expect(try await get(base + "/_mirror/" + file, headers: bearer("office-token")).text == "bytes")

            // The north kiosk's token removed, and the file read again.
            try ("# devices\n" + everything + elsewhere).write(toFile: tokens, atomically: true, encoding: .utf8)
            reload.yield()
            var status = 200
            for _ in 0..<500 where status != 401 {
                status = try await get(base + "/north?page=1", headers: bearer("north-token")).status
                if status != 401 { try await Task.sleep(for: .milliseconds(10)) }
            }
            #expect(status == 401)
            #expect(try await get(base + "/_mirror/tables", headers: bearer("office-token")).status == 200)
        }
        reload.finish()
        // What serve logged, at every level, names no token.
        let logged = capture.entries.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        #expect(logged.contains("device tokens read again"))
        for token in ["north-token", "office-token", "other-token", "guess"] { #expect(!logged.contains(token), "\(token)") }
    }

    @Test("a token file that cannot be read is refused before listening, naming its line; an added token is printed once and stored hashed")
    func fileAndAdd() async throws {
        let folder = try TemporaryFolder()
        let tokens = folder.path + "/devices.jsonl"
        try ("{\"name\":\"a\",\"sha256\":\"abc\",\"accounts\":\"*\",\"tables\":\"*\"}\n").write(toFile: tokens, atomically: true,
                                                                                              encoding: .utf8)
        var options = MirrorServer.Options(output: folder.path)
        options.port = 0
        options.deviceTokens = tokens
        await #expect {
            try await MirrorServer(options: options).with(logger: quiet) { _ in }
        } throws: { error in
            (error as? MirrorServer.ListenFailure)?.description
                == "\(tokens):1: 'sha256' must be the SHA-256 of a token, 64 hex digits, not 'abc'"
        }
        try FileManager.default.removeItem(atPath: tokens)
        let token = try DeviceTokens.add(name: "kiosk-3", accounts: ["north"], tables: ["t_item"], to: tokens)
        #expect(token.count == 43)
        let hash = SHA256.hash(data: Array(token.utf8)).map { String(format: "%02x", $0) }.joined()
        #expect(try String(contentsOfFile: tokens, encoding: .utf8)
            == #"{"name":"kiosk-3","sha256":"\#(hash)","accounts":["north"],"tables":["t_item"]}"# + "\n")
        let read = try DeviceTokens(file: tokens)
        #expect(read.scope(of: token)?.name == "kiosk-3")
        #expect(read.scope(of: "x") == nil)
    }
}
