import Foundation
@testable import MirrorHTTP
@testable import MirrorModel
import MirrorTestSupport
import Testing

/// Three pages of items, each naming the same downloaded file, 300 bytes.
private let fileBytes = (0..<300).map { UInt8($0 % 251) }

private func api(_ request: FixtureRequest) async -> FixtureResponse {
    if request.path == "/f/a.bin" { return FixtureResponse(headers: [("Content-Type", "application/octet-stream")], body: fileBytes) }
    let file = "http://\(request.authority)/f/a.bin"
    switch request.parameter("page") {
    case "1": return .json(#"{"data":[{"id":1,"f":"\#(file)"},{"id":2,"f":"\#(file)"}]}"#)
    case "2": return .json(#"{"data":[{"id":3,"f":"\#(file)"}]}"#)
    default: return .json(#"{"data":[]}"#)
    }
}

private let filesYAML = """
    version: 1
    output: out
    jobs:
      - name: items
        url: "BASE/items?page={page}"
        records: data
        id: id
        table: t_item
        downloads: [f]
    """

/// An answer of the server: its status, content type and body.
private struct Answer {
    let status: Int
    let contentType: String?
    let body: [UInt8]
    var text: String { String(decoding: body, as: UTF8.self) }
}

extension Served {
    /// `target` asked for with `method`, with `headers`.
    fileprivate func answer(_ target: String, method: String = "GET", headers: [(String, String)] = []) async throws -> Answer {
        let answer = try await HTTPClient().send(HTTPRequest(
            method: method, url: RedactedURL(real: "http://127.0.0.1:\(port)\(target)", redactor: .none),
            headers: headers.map { Header(name: $0.0, value: RedactedText(real: $0.1, redactor: .none)) },
            body: nil, timeout: answerTimeout, maxBytes: 1 << 20))
        return Answer(status: answer.status, contentType: answer.headers["content-type"], body: answer.body)
    }
}

/// Walks `filesYAML` against the fixture API into `folder`/out; the path the file is served at.
private func walk(in folder: String) async throws -> String {
    try await FixtureServer.with(api) { server in
        try filesYAML.replacingOccurrences(of: "BASE", with: server.base)
            .write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
        let run = try await mirror(["run", "jobs.yaml", "--quiet"], in: folder)
        #expect(run.status == 0, "\(run.stderr)")
    }
    let files = try #require(FileManager.default.enumerator(atPath: folder + "/out/files")?.allObjects as? [String])
    // Named by its URL's SHA-256, its extension kept.
    let file = try #require(files.first { $0.hasSuffix(".bin") && !$0.hasPrefix(".") })
    return "/_mirror/files/" + file
}

@Suite("mirror serve --metrics", .enabled(if: AuthServer.python != nil, "MIRROR_TEST_PYTHON is not set (scripts/test.sh sets it)"),
       .timeLimit(.minutes(6)))
struct ServeMetricsTests {
    static let routes = ["page", "file", "records", "changes", "status", "metrics", "other"]
    static let statusClasses = ["2xx", "3xx", "4xx", "5xx"]
    /// The upper bounds of the duration histogram's buckets, in seconds, and +Inf.
    static let bounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, .infinity]

    @Test("requests by route and status class, their durations and the bytes sent, as the official parser reads /metrics")
    func counts() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let filePath = try await walk(in: folder)
        let served = try await Served.start(in: folder, name: "serve", arguments: ["--metrics"])
        var sent: [String: Int] = [:]
        func ask(_ target: String, _ route: String, method: String = "GET", headers: [(String, String)] = []) async throws -> Answer {
            let answer = try await served.answer(target, method: method, headers: headers)
            sent[route, default: 0] += answer.body.count
            return answer
        }
        for page in 1...3 { #expect(try await ask("/items?page=\(page)", "page").status == 200) }
        #expect(try await ask("/items?page=9", "page").status == 404)
        let file = try await ask(filePath, "file")
        #expect(file.status == 200 && file.body == fileBytes)
        // Its head alone: counted, timed, no bytes sent.
        let head = try await ask(filePath, "file", method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(try await ask("/_mirror/nothing", "other").status == 404)
        #expect(try await ask("/_mirror/tables/t_item", "records").status == 200)
        // A name that points here by DNS rebinding gets no metrics, as it gets no status.
        let refused = #"{"error":"this server answers requests for 127.0.0.1 and localhost only"}"# + "\n"
        for (target, route) in [("/metrics", "metrics"), ("/_mirror/status", "status")] {
            let rebound = try await ask(target, route, headers: [("Host", "evil.example")])
            #expect(rebound.status == 403 && rebound.text == refused, "\(target)")
        }

        let metrics = try await served.answer("/metrics")
        #expect(await served.stop() == .exited(0))
        #expect(metrics.status == 200)
        #expect(metrics.contentType == "text/plain; version=0.0.4; charset=utf-8")
        #expect(!metrics.text.contains("items?") && !metrics.text.contains("a.bin") && !metrics.text.contains("evil"))
        try metrics.body.write(to: folder + "/serve.prom")
        let parsed = try await samples("serve.prom", in: folder)

        var requests: [String: Double] = [:]
        for route in Self.routes {
            for statusClass in Self.statusClasses {
                requests["mirror_serve_requests_total{route=\"\(route)\",status_class=\"\(statusClass)\"}"] = 0
            }
        }
        let answered = [("page", "2xx", 3), ("page", "4xx", 1), ("file", "2xx", 2), ("other", "4xx", 1), ("records", "2xx", 1),
                        ("metrics", "4xx", 1), ("status", "4xx", 1)]
        for (route, statusClass, count) in answered {
            requests["mirror_serve_requests_total{route=\"\(route)\",status_class=\"\(statusClass)\"}"] = Double(count)
        }
        #expect(parsed.filter { $0.key.hasPrefix("mirror_serve_requests_total") } == requests)

        // The scrape that reads them is counted once it has been sent, after them.
        let asked = ["page": 4, "file": 2, "records": 1, "changes": 0, "status": 1, "metrics": 1, "other": 1]
        #expect(parsed.filter { $0.key.hasPrefix("mirror_serve_request_duration_seconds_count") }
            == Dictionary(uniqueKeysWithValues: asked.map { ("mirror_serve_request_duration_seconds_count{route=\"\($0.key)\"}", Double($0.value)) }))
        let bucketPrefix = #"mirror_serve_request_duration_seconds_bucket{le=""#
        let fileBuckets = parsed.filter { $0.key.hasPrefix(bucketPrefix) && $0.key.hasSuffix(#"",route="file"}"#) }
        #expect(fileBuckets.keys.compactMap { key in Double(key.dropFirst(bucketPrefix.count).prefix { $0 != "\"" }) }.sorted()
            == Self.bounds)
        #expect(parsed[#"mirror_serve_request_duration_seconds_bucket{le="+Inf",route="file"}"#] == 2)

        #expect(sent["file"] == fileBytes.count)
        #expect(parsed.filter { $0.key.hasPrefix("mirror_serve_sent_bytes_total") }
            == Dictionary(uniqueKeysWithValues: Self.routes.map { ("mirror_serve_sent_bytes_total{route=\"\($0)\"}", Double(sent[$0] ?? 0)) }))
    }

    @Test("without --metrics, /metrics is one of the API's paths: the mirror holds no page for it")
    func offByDefault() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        _ = try await walk(in: folder)
        let served = try await Served.start(in: folder, name: "serve")
        let metrics = try await served.answer("/metrics")
        #expect(await served.stop() == .exited(0))
        #expect(metrics.status == 404 && metrics.contentType == "application/json")
        #expect(metrics.text.hasPrefix(#"{"error":"the mirror holds no page for GET /metrics","closest":["#), "\(metrics.text)")
    }

    @Test("with --device-tokens: /metrics needs a token that reads everything, and holds no token, hash or device name")
    func deviceTokens() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        _ = try await walk(in: folder)
        var tokens: [String: String] = [:]
        for (name, scope) in [("wall-1", ["--account", "*", "--table", "*"]), ("kiosk-3", ["--account", "*", "--table", "t_other"])] {
            let added = try await mirror(["device-token", "add", name, "--device-tokens", "devices.jsonl"] + scope, in: folder)
            #expect(added.status == 0, "\(added.stderr)")
            tokens[name] = added.stdout.trimmingCharacters(in: .newlines)
        }
        let whole = try #require(tokens["wall-1"])
        let narrow = try #require(tokens["kiosk-3"])
        let served = try await Served.start(in: folder, name: "serve", arguments: ["--metrics", "--device-tokens", "devices.jsonl"])
        #expect(try await served.answer("/items?page=1", headers: [("Authorization", "Bearer " + whole)]).status == 200)
        #expect(try await served.answer("/metrics").status == 401)
        #expect(try await served.answer("/metrics", headers: [("Authorization", "Bearer " + narrow)]).status == 403)
        let metrics = try await served.answer("/metrics", headers: [("Authorization", "Bearer " + whole)])
        #expect(await served.stop() == .exited(0))
        #expect(metrics.status == 200)
        let hashes = try String(contentsOfFile: folder + "/devices.jsonl", encoding: .utf8)
            .matches(of: #/"sha256":"([0-9a-f]{64})"/#).map { String($0.1) }
        #expect(hashes.count == 2)
        for secret in [whole, narrow] + hashes + ["wall-1", "kiosk-3", "Bearer"] {
            #expect(!metrics.text.contains(secret), "\(secret)")
        }
        try metrics.body.write(to: folder + "/serve.prom")
        let parsed = try await samples("serve.prom", in: folder)
        #expect(parsed[#"mirror_serve_requests_total{route="page",status_class="2xx"}"#] == 1)
        #expect(parsed[#"mirror_serve_requests_total{route="metrics",status_class="4xx"}"#] == 2)
    }
}

extension [UInt8] {
    fileprivate func write(to path: String) throws {
        try Data(self).write(to: URL(fileURLWithPath: path))
    }
}
