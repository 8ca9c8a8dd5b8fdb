import Foundation
import MirrorTestSupport
import Testing

private let jobsYAML = """
    version: 1
    output: out
    jobs:
      - name: events
        url: "BASE/events?page={page}&key=${API_KEY}"
        headers: { Authorization: "Bearer ${API_TOKEN}" }
        records: data
        id: id
        table: t_event
        concurrency: 1
        propagate_trace: true
      - name: users
        url: "BASE/users?page={page}"
        records: data
        id: id
        table: t_user
        concurrency: 1
    """

private let secrets = ["API_KEY": "k3y-s3cr3t-url", "API_TOKEN": "t0k3n-s3cr3t-header"]

/// Two pages of events (ids 1-3), one of users (id 9), then empty pages.
private func pages(_ request: FixtureRequest) -> FixtureResponse {
    switch (request.path, request.parameter("page")) {
    case ("/events", "1"): .json(#"{"data":[{"id":1},{"id":2}]}"#)
    case ("/events", "2"): .json(#"{"data":[{"id":3}]}"#)
    case ("/users", "1"): .json(#"{"data":[{"id":9}]}"#)
    default: .json(#"{"data":[]}"#)
    }
}

/// A span as the receiver decoded it.
private struct Span: Equatable {
    var name: String
    var traceID: String
    var spanID: String
    var parentID: String?
    var kind: String
    var attributes: [String: String]
    var error: Bool
}

/// The OTLP value of an attribute, as text: strings as they are, ints as digits.
private func text(_ value: [String: Any]) -> String {
    if let string = value["stringValue"] as? String { return string }
    if let int = value["intValue"] as? String { return int }
    if let bool = value["boolValue"] as? Bool { return String(bool) }
    if let double = value["doubleValue"] as? Double { return String(double) }
    return "\(value)"
}

private func attributes(_ list: Any?) -> [String: String] {
    var attributes: [String: String] = [:]
    for entry in list as? [[String: Any]] ?? [] {
        attributes[entry["key"] as? String ?? ""] = text(entry["value"] as? [String: Any] ?? [:])
    }
    return attributes
}

/// What the receiver took: every span, the resources they came with, and each sum and
/// histogram data point of the last metrics export, as `name{key="value",…}` (keys in order).
private struct Received {
    var spans: [Span] = []
    var services: Set<String> = []
    var sums: [String: Double] = [:]
    var histogramCounts: [String: Double] = [:]
    var raw: String

    init(_ data: Data) throws {
        raw = String(decoding: data, as: UTF8.self)
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        for export in root["traces"] as? [[String: Any]] ?? [] {
            for resource in export["resourceSpans"] as? [[String: Any]] ?? [] {
                let resourceAttributes = attributes((resource["resource"] as? [String: Any])?["attributes"])
                if let service = resourceAttributes["service.name"] { services.insert(service) }
                for scope in resource["scopeSpans"] as? [[String: Any]] ?? [] {
                    for span in scope["spans"] as? [[String: Any]] ?? [] {
                        let status = span["status"] as? [String: Any]
                        spans.append(Span(name: span["name"] as? String ?? "", traceID: span["traceId"] as? String ?? "",
                                          spanID: span["spanId"] as? String ?? "",
                                          parentID: (span["parentSpanId"] as? String).flatMap { $0.isEmpty ? nil : $0 },
                                          kind: span["kind"] as? String ?? "", attributes: attributes(span["attributes"]),
                                          error: status?["code"] as? String == "STATUS_CODE_ERROR"))
                    }
                }
            }
        }
        // Cumulative: the last export holds each series' final value.
        for export in root["metrics"] as? [[String: Any]] ?? [] {
            for resource in export["resourceMetrics"] as? [[String: Any]] ?? [] {
                for scope in resource["scopeMetrics"] as? [[String: Any]] ?? [] {
                    for metric in scope["metrics"] as? [[String: Any]] ?? [] {
                        let name = metric["name"] as? String ?? ""
                        func key(_ point: [String: Any]) -> String {
                            let labels = attributes(point["attributes"]).sorted { $0.key < $1.key }
                            return name + "{" + labels.map { "\($0.key)=\"\($0.value)\"" }.joined(separator: ",") + "}"
                        }
                        for point in (metric["sum"] as? [String: Any])?["dataPoints"] as? [[String: Any]] ?? [] {
                            let value = (point["asDouble"] as? Double) ?? Double(point["asInt"] as? String ?? "") ?? .nan
                            sums[key(point)] = value
                        }
                        for point in (metric["histogram"] as? [String: Any])?["dataPoints"] as? [[String: Any]] ?? [] {
                            histogramCounts[key(point)] = Double(point["count"] as? String ?? "") ?? .nan
                        }
                    }
                }
            }
        }
    }
}

private func received(from receiver: AuthServer) throws -> Received {
    try Received(Data(contentsOf: URL(string: receiver.base + "/received")!))
}

@Suite("mirror run --otlp-endpoint: spans and metrics to an OTLP/HTTP receiver",
       .enabled(if: AuthServer.python != nil, "MIRROR_TEST_PYTHON is not set (scripts/test.sh sets it)"),
       .timeLimit(.minutes(6)))
struct OTLPExportTests {
    @Test("a run, its jobs and each page request arrive as spans, parent to child, in one trace; traceparent only where propagate_trace; the metrics' exact values; no secret")
    func spansAndMetrics() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await AuthServer.with("otlp_server.py", []) { receiver in
            try await FixtureServer.with({ pages($0) }) { server in
                try jobsYAML.replacingOccurrences(of: "BASE", with: server.base)
                    .write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
                let run = try await mirror(["run", "jobs.yaml", "--otlp-endpoint", receiver.base, "--metrics-file", "mirror.prom"],
                                           in: folder, environment: secrets)
                #expect(run.status == 0, "\(run.stderr)")
                for secret in secrets.values { #expect(!run.stderr.contains(secret)) }

                let got = try received(from: receiver)
                for secret in secrets.values { #expect(!got.raw.contains(secret)) }
                #expect(got.services == ["mirror"])

                let runs = got.spans.filter { $0.name == "run" }
                try #require(runs.count == 1)
                let root = runs[0]
                #expect(root.parentID == nil && root.kind == "SPAN_KIND_INTERNAL" && !root.error)
                #expect(root.attributes["mirror.jobs"] == "2" && root.attributes["mirror.jobs.failed"] == "0")
                #expect(Set(got.spans.map(\.traceID)) == [root.traceID])

                let jobs = Dictionary(uniqueKeysWithValues: got.spans.filter { $0.name.hasPrefix("job ") }.map { ($0.name, $0) })
                #expect(Set(jobs.keys) == ["job events", "job users"])
                let events = try #require(jobs["job events"])
                let users = try #require(jobs["job users"])
                for job in [events, users] { #expect(job.parentID == root.spanID) }
                #expect(events.attributes["mirror.job"] == "events" && events.attributes["mirror.table"] == "t_event")
                #expect(events.attributes["mirror.status"] == "ok" && events.attributes["mirror.pages"] == "3")
                #expect(events.attributes["mirror.records.new"] == "3" && users.attributes["mirror.records.new"] == "1")

                let requests = got.spans.filter { $0.name == "GET" }
                #expect(requests.count == 5)
                #expect(got.spans.count == 8)  // the run, its 2 jobs and their 5 requests
                for request in requests {
                    #expect(request.kind == "SPAN_KIND_CLIENT" && !request.error)
                    #expect(request.attributes["http.request.method"] == "GET")
                    #expect(request.attributes["http.response.status_code"] == "200")
                    #expect(request.attributes["server.address"] == "127.0.0.1")
                    #expect(request.attributes["server.port"] == "\(server.port)")
                    let job = try #require(request.attributes["mirror.job"])
                    #expect(request.parentID == jobs["job \(job)"]?.spanID)
                }
                #expect(Set(requests.compactMap { $0.attributes["url.full"] }) == [
                    server.base + "/events?page=1&key=REDACTED", server.base + "/events?page=2&key=REDACTED",
                    server.base + "/events?page=3&key=REDACTED", server.base + "/users?page=1", server.base + "/users?page=2",
                ])

                // Each events request names its own span as the server's parent; users send none.
                let eventSpans = requests.filter { $0.attributes["mirror.job"] == "events" }
                let sent = server.requests.filter { $0.path == "/events" }.compactMap { $0.headers["traceparent"] }
                #expect(Set(sent) == Set(eventSpans.map { "00-\(root.traceID)-\($0.spanID)-01" }))
                #expect(sent.count == 3)
                #expect(server.requests.filter { $0.path == "/users" }.allSatisfy { $0.headers["traceparent"] == nil })

                let job = #"job="events""#
                #expect(got.sums["mirror_pages_stored_total{\(job)}"] == 3)
                #expect(got.sums["mirror_pages_stored_total{job=\"users\"}"] == 2)
                #expect(got.sums["mirror_records_total{change=\"new\",\(job)}"] == 3)
                #expect(got.sums["mirror_http_requests_total{\(job),status_class=\"2xx\"}"] == 3)
                #expect(got.sums["mirror_http_retries_total{\(job)}"] == 0)
                #expect(got.histogramCounts["mirror_http_request_duration_seconds{\(job)}"] == 3)
                #expect(got.histogramCounts["mirror_walk_duration_seconds{job=\"users\"}"] == 1)
                // The Prometheus file, written beside, counted the same.
                let file = try String(contentsOfFile: folder + "/mirror.prom", encoding: .utf8)
                #expect(file.contains("mirror_pages_stored_total{job=\"events\"} 3\n"), "\(file)")
            }
        }
    }

    @Test("OTEL_EXPORTER_OTLP_ENDPOINT alone turns the export on; the flag wins over it; OTEL_SDK_DISABLED=true turns it off")
    func environment() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await AuthServer.with("otlp_server.py", []) { receiver in
            try await AuthServer.with("otlp_server.py", []) { other in
                try await FixtureServer.with({ pages($0) }) { server in
                    try jobsYAML.replacingOccurrences(of: "BASE", with: server.base)
                        .write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
                    var environment = secrets.merging(["OTEL_EXPORTER_OTLP_ENDPOINT": receiver.base]) { $1 }
                    let byVariable = try await mirror(["run", "jobs.yaml", "--job", "users"], in: folder, environment: environment)
                    #expect(byVariable.status == 0, "\(byVariable.stderr)")
                    #expect(try received(from: receiver).spans.map(\.name).sorted() == ["GET", "GET", "job users", "run"])

                    let byFlag = try await mirror(["run", "jobs.yaml", "--job", "users", "--otlp-endpoint", other.base],
                                                  in: folder, environment: environment)
                    #expect(byFlag.status == 0, "\(byFlag.stderr)")
                    #expect(try received(from: other).spans.count == 4)
                    #expect(try received(from: receiver).spans.count == 4)

                    environment["OTEL_SDK_DISABLED"] = "true"
                    let disabled = try await mirror(["run", "jobs.yaml", "--job", "users"], in: folder, environment: environment)
                    #expect(disabled.status == 0, "\(disabled.stderr)")
                    #expect(try received(from: receiver).spans.count == 4)
                }
            }
        }
    }

    @Test("a collector that is not there: the run succeeds all the same and says the export failed; a bad URL is a usage error")
    func collectorAway() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with({ pages($0) }) { server in
            try jobsYAML.replacingOccurrences(of: "BASE", with: server.base)
                .write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            // A port nothing listens on: FixtureServer's own, once it is closed, is not known
            // here; port 9 (discard) is not served on 127.0.0.1 in the test machines.
            let away = try await mirror(["run", "jobs.yaml", "--job", "users", "--otlp-endpoint", "http://127.0.0.1:9"],
                                        in: folder, environment: secrets)
            #expect(away.status == 0, "\(away.stderr)")
            #expect(away.stdout.hasPrefix("users: ok, 2 pages, 1 record"), "\(away.stdout)")
            #expect(away.stderr.contains("Failed to export metrics.") && away.stderr.contains("Failed to export batch."), "\(away.stderr)")

            let bad = try await mirror(["run", "jobs.yaml", "--otlp-endpoint", "collector:4318"], in: folder, environment: secrets)
            #expect(bad.status == 2)
            #expect(bad.stderr.contains("--otlp-endpoint must be the http or https URL of an OTLP/HTTP receiver, such as "
                + "http://127.0.0.1:4318, not 'collector:4318'"), "\(bad.stderr)")
            #expect(server.requests.filter { $0.path == "/events" }.isEmpty)
        }
    }
}
