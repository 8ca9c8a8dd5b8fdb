import Foundation
import Logging
@testable import MirrorModel
@testable import MirrorRemote
import MirrorTestSupport
import Synchronization
import Testing

private let jobYAML = """
    version: 1
    output: out
    jobs:
      - name: events
        url: "BASE/events?page={page}&key=${API_KEY}"
        headers: { Authorization: "Bearer ${API_TOKEN}" }
        records: data.list
        id: id
        table: t_event
        concurrency: 1
    """

private let secrets = ["API_KEY": "k3y-s3cr3t-url", "API_TOKEN": "t0k3n-s3cr3t-header"]

private let pageOne = #"{"data":{"list":[{"id":"1"},{"id":"2"}]}}"#
private let pageTwo = #"{"data":{"list":[{"id":"3"}]}}"#
private let emptyPage = #"{"data":{"list":[]}}"#

/// True the first time it is asked while armed, then false.
private final class Once: Sendable {
    private let armed: Mutex<Bool>
    init(_ armed: Bool) { self.armed = Mutex(armed) }
    func take() -> Bool {
        armed.withLock { armed in
            defer { armed = false }
            return armed
        }
    }
}

/// Page 1, then a 429 with `Retry-After: 0` the first time page 2 is asked for, then page 2,
/// then an empty page.
private func serve(_ limited: Once) -> @Sendable (FixtureRequest) async -> FixtureResponse {
    { request in
        switch request.parameter("page") {
        case "1": return .json(pageOne)
        case "2":
            return limited.take() ? FixtureResponse(status: 429, headers: [("Retry-After", "0")], body: Array("slow down".utf8))
                : .json(pageTwo)
        default: return .json(emptyPage)
        }
    }
}

/// The samples of a Prometheus text file as the official client's parser reads them, keyed
/// `name{label="value",…}` with the labels in name order.
func samples(_ path: String, in folder: String) async throws -> [String: Double] {
    let python = try #require(AuthServer.python)
    let script = """
        import json, sys
        from prometheus_client.parser import text_string_to_metric_families
        samples = {}
        for family in text_string_to_metric_families(open(sys.argv[1]).read()):
            for sample in family.samples:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
                samples[f"{sample.name}{{{labels}}}"] = sample.value
        print(json.dumps(samples))
        """
    let out = folder + "/.parsed.json"
    let err = folder + "/.parsed.err"
    defer {
        try? FileManager.default.removeItem(atPath: out)
        try? FileManager.default.removeItem(atPath: err)
    }
    let child = try Child(python, ["-c", script, path], in: folder, environment: ProcessInfo.processInfo.environment,
                          stdout: out, stderr: err)
    let ending = await child.ending()
    #expect(ending.status == 0, "\((try? String(contentsOfFile: err, encoding: .utf8)) ?? "")")
    return try JSONDecoder().decode([String: Double].self, from: Data(contentsOf: URL(fileURLWithPath: out)))
}

@Suite("mirror run --metrics-file", .enabled(if: AuthServer.python != nil, "MIRROR_TEST_PYTHON is not set (scripts/test.sh sets it)"),
       .timeLimit(.minutes(6)))
struct MetricsFileTests {
    @Test("a walk through a 429: the official parser reads exact counts of pages, records, requests by status class, retries and 429s; no secret, no temporary file")
    func counts() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let limited = Once(true)
        try await FixtureServer.with(serve(limited)) { server in
            try jobYAML.replacingOccurrences(of: "BASE", with: server.base).write(toFile: folder + "/jobs.yaml", atomically: true,
                                                                                   encoding: .utf8)
            try FileManager.default.createDirectory(atPath: folder + "/metrics", withIntermediateDirectories: false)
            let before = Date().timeIntervalSince1970.rounded(.down)
            let run = try await mirror(["run", "jobs.yaml", "--metrics-file", "metrics/mirror.prom"], in: folder,
                                       environment: secrets)
            let after = Date().timeIntervalSince1970.rounded(.up)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.hasPrefix("events: ok, 3 pages, 3 records (3 new, 0 updated, 0 unchanged), "), "\(run.stdout)")
            #expect(server.requests.count == 4)

            #expect(try FileManager.default.contentsOfDirectory(atPath: folder + "/metrics") == ["mirror.prom"])
            let text = try String(contentsOfFile: folder + "/metrics/mirror.prom", encoding: .utf8)
            for secret in secrets.values { #expect(!text.contains(secret)) }
            #expect(!text.contains("s3cr3t") && !text.contains(server.base) && !text.contains("127.0.0.1"))

            var parsed = try await samples("metrics/mirror.prom", in: folder)
            let job = #"job="events""#
            let lastSuccess = parsed.removeValue(forKey: "mirror_last_success_timestamp_seconds{\(job)}") ?? 0
            #expect(lastSuccess >= before && lastSuccess <= after)
            // Durations vary; how many were observed does not.
            #expect(parsed.filter { $0.key.hasPrefix("mirror_http_request_duration_seconds_count") }
                == ["mirror_http_request_duration_seconds_count{\(job)}": 4])
            #expect(parsed.filter { $0.key.hasPrefix("mirror_walk_duration_seconds_count") }
                == ["mirror_walk_duration_seconds_count{\(job)}": 1])
            let counted = parsed.filter { !$0.key.hasPrefix("mirror_http_request_duration_seconds") && !$0.key.hasPrefix("mirror_walk_duration_seconds") }
            let bytes = Double(pageOne.utf8.count + pageTwo.utf8.count + emptyPage.utf8.count)
            #expect(counted == [
                "mirror_http_requests_total{\(job),status_class=\"1xx\"}": 0,
                "mirror_http_requests_total{\(job),status_class=\"2xx\"}": 3,
                "mirror_http_requests_total{\(job),status_class=\"3xx\"}": 0,
                "mirror_http_requests_total{\(job),status_class=\"4xx\"}": 1,
                "mirror_http_requests_total{\(job),status_class=\"5xx\"}": 0,
                "mirror_http_requests_total{\(job),status_class=\"error\"}": 0,
                "mirror_http_retries_total{\(job)}": 1,
                "mirror_http_rate_limited_total{\(job)}": 1,
                "mirror_pages_stored_total{\(job)}": 3,
                "mirror_records_total{change=\"new\",\(job)}": 3,
                "mirror_records_total{change=\"updated\",\(job)}": 0,
                "mirror_records_total{change=\"deleted\",\(job)}": 0,
                "mirror_fetched_bytes_total{\(job)}": bytes,
                "mirror_quota_waits_total{\(job)}": 0,
                "mirror_quota_wait_seconds_total{\(job)}": 0,
                "mirror_job_success{\(job)}": 1,
                "mirror_jobs_deferred_total{\(job)}": 0,
            ])
        }
    }

    @Test("a failed job: exit 1, and the file is written all the same, with its 404 and no last success")
    func failedJob() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with({ _ in .text("no such list", status: 404) }) { server in
            try jobYAML.replacingOccurrences(of: "BASE", with: server.base).write(toFile: folder + "/jobs.yaml", atomically: true,
                                                                                   encoding: .utf8)
            let run = try await mirror(["run", "jobs.yaml", "--metrics-file", "mirror.prom"], in: folder, environment: secrets)
            #expect(run.status == 1)
            let parsed = try await samples("mirror.prom", in: folder)
            let job = #"job="events""#
            #expect(parsed["mirror_http_requests_total{\(job),status_class=\"4xx\"}"] == 1)
            #expect(parsed["mirror_http_retries_total{\(job)}"] == 0)
            #expect(parsed["mirror_pages_stored_total{\(job)}"] == 0)
            #expect(parsed.keys.filter { $0.hasPrefix("mirror_last_success") }.isEmpty)
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.contains(".tmp-") }.isEmpty)
        }
    }

    @Test("a metrics file in a folder that is not there: a usage error, nothing requested")
    func missingFolder() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with(serve(Once(false))) { server in
            try jobYAML.replacingOccurrences(of: "BASE", with: server.base).write(toFile: folder + "/jobs.yaml", atomically: true,
                                                                                   encoding: .utf8)
            let run = try await mirror(["run", "jobs.yaml", "--metrics-file", "gone/mirror.prom"], in: folder, environment: secrets)
            #expect(run.status == 2)
            #expect(run.stderr.contains("--metrics-file 'gone/mirror.prom': the folder 'gone' does not exist; "
                + "create it or choose a file in another folder\n"), "\(run.stderr)")
            #expect(server.requests.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: folder + "/out"))
        }
    }
}

/// Runs `mirror run jobs.yaml --metrics-file mirror.prom` plus `arguments` in `folder` with `yaml` as the job file, and
/// gives the run and the samples the official parser reads in the file it wrote.
private func runMetered(_ yaml: String, _ arguments: [String] = [], in folder: String, environment: [String: String] = [:]) async throws
    -> (run: Invocation, samples: [String: Double], text: String) {
    try yaml.write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
    try? FileManager.default.removeItem(atPath: folder + "/mirror.prom")
    let run = try await mirror(["run", "jobs.yaml", "--metrics-file", "mirror.prom"] + arguments, in: folder, environment: environment)
    let text = try String(contentsOfFile: folder + "/mirror.prom", encoding: .utf8)
    return (run, try await samples("mirror.prom", in: folder), text)
}

/// The samples of `family` (a metric's name), without its name: `{job="events"}` and so on.
private func family(_ samples: [String: Double], _ name: String) -> [String: Double] {
    Dictionary(uniqueKeysWithValues: samples.filter { $0.key.hasPrefix(name + "{") }.map { (String($0.key.dropFirst(name.count)), $0.value) })
}

@Suite("mirror run --metrics-file: what else a run counts",
       .enabled(if: AuthServer.python != nil, "MIRROR_TEST_PYTHON is not set (scripts/test.sh sets it)"), .timeLimit(.minutes(6)))
struct RunMetricsTests {
    @Test("downloads: 2 files downloaded with their bytes, 1 failed")
    func files() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let bodies = ["a": "pixels of a", "b": "more pixels of b"]
        try await FixtureServer.with({ request in
            if request.path.hasPrefix("/img/") {
                let name = String(request.path.dropFirst("/img/".count).prefix { $0 != "." })
                guard let body = bodies[name] else { return .text("no such image", status: 404) }
                return FixtureResponse(headers: [("Content-Type", "image/png")], body: Array(body.utf8))
            }
            guard request.parameter("page") == "1" else { return .json(emptyPage) }
            let records = ["a", "b", "c"].map { #"{"id":"\#($0)","img":"\#(request.base)/img/\#($0).png"}"# }
            return .json(#"{"data":{"list":[\#(records.joined(separator: ","))]}}"#)
        }) { server in
            let (run, parsed, _) = try await runMetered("""
                version: 1
                output: out
                jobs:
                  - { name: events, url: "\(server.base)/events?page={page}", records: data.list, id: id, table: t_event,
                      downloads: [img], retries: 0 }
                """, in: folder)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(family(parsed, "mirror_files_total") == [
                #"{job="events",outcome="downloaded"}"#: 2, #"{job="events",outcome="failed"}"#: 1,
            ])
            #expect(family(parsed, "mirror_file_bytes_total") == [#"{job="events"}"#: Double(bodies.values.map(\.utf8.count).reduce(0, +))])
        }
    }

    @Test("a host's spent quota: one wait for its renewal, of at most the second it said")
    func quotaWaits() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with({ request in
            request.parameter("page") == "1"
                ? .json(pageOne, headers: [("RateLimit-Limit", "5"), ("RateLimit-Remaining", "0"), ("RateLimit-Reset", "1")])
                : .json(emptyPage)
        }) { server in
            let (run, parsed, _) = try await runMetered("""
                version: 1
                output: out
                jobs:
                  - { name: events, url: "\(server.base)/events?page={page}", records: data.list, id: id, table: t_event,
                      concurrency: 1 }
                """, in: folder)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(family(parsed, "mirror_quota_waits_total") == [#"{job="events"}"#: 1])
            let waited = try #require(parsed[#"mirror_quota_wait_seconds_total{job="events"}"#])
            #expect(waited > 0 && waited <= 1)
        }
    }

    @Test("job results: success 1 and 0, a deferred job counted with no success line, refresh_after in seconds; a failed second run keeps the stored last success")
    func jobResults() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let goodFails = Mutex(false)
        // The slow job's host is another: a host's Retry-After holds every job that asks it.
        try await FixtureServer.with({ _ in
            FixtureResponse(status: 429, headers: [("Retry-After", "3600")], body: Array("later".utf8))
        }) { slowServer in
            try await FixtureServer.with({ request in
                switch request.path {
                case "/good" where !goodFails.withLock { $0 }:
                    return .json(request.parameter("page") == "1" ? pageOne : emptyPage)
                default: return .text("no such list", status: 404)
                }
            }) { server in
                let yaml = """
                    version: 1
                    output: out
                    jobs:
                      - { name: good, url: "\(server.base)/good?page={page}", records: data.list, id: id, table: t_good, refresh_after: 2h }
                      - { name: bad, url: "\(server.base)/bad?page={page}", records: data.list, id: id, table: t_bad }
                      - { name: slow, url: "\(slowServer.base)/slow?page={page}", records: data.list, id: id, table: t_slow, max_wait: 1s }
                    """
                let first = try await runMetered(yaml, in: folder)
                #expect(first.run.status == 1, "\(first.run.stderr)")
                #expect(family(first.samples, "mirror_job_success") == [#"{job="good"}"#: 1, #"{job="bad"}"#: 0])
                #expect(family(first.samples, "mirror_jobs_deferred_total") == [#"{job="good"}"#: 0, #"{job="bad"}"#: 0, #"{job="slow"}"#: 1])
                #expect(family(first.samples, "mirror_job_refresh_after_seconds") == [#"{job="good"}"#: 7200])
                let stored = try await sqlite(folder + "/out/t_good.sqlite", "SELECT max(finished_at) FROM _mirror_runs WHERE result = 'ok'")
                let lastSuccess = try #require(Timestamp.date(stored.trimmingCharacters(in: .whitespacesAndNewlines))).timeIntervalSince1970.rounded()
                #expect(family(first.samples, "mirror_last_success_timestamp_seconds") == [#"{job="good"}"#: lastSuccess])

                // The second run: the good job fails, the slow one is still deferred from the first.
                goodFails.withLock { $0 = true }
                let second = try await runMetered(yaml, in: folder)
                #expect(second.run.status == 1, "\(second.run.stderr)")
                #expect(family(second.samples, "mirror_job_success") == [#"{job="good"}"#: 0, #"{job="bad"}"#: 0])
                #expect(family(second.samples, "mirror_jobs_deferred_total") == [#"{job="good"}"#: 0, #"{job="bad"}"#: 0, #"{job="slow"}"#: 1])
                #expect(family(second.samples, "mirror_last_success_timestamp_seconds") == [#"{job="good"}"#: lastSuccess])
            }
        }
    }

    @Test("token fetches by auth definition: one ok, one refused; no secret in the file")
    func tokenFetches() async throws {
        try await AuthServer.with("oauth_server.py", ["--pages", "2"]) { server in
            let folder = try temporaryFolder()
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let environment = ["SECRET": "mirror-cc-secret", "WRONG": "n0t-the-s3cr3t"]
            let (run, parsed, text) = try await runMetered("""
                version: 1
                output: out
                auth:
                  dot:
                    type: oauth2
                    grant: client_credentials
                    token_url: \(server.value("token_url")!)
                    client_id: mirror-cc-client
                    client_secret: "${SECRET}"
                  wrong:
                    type: oauth2
                    grant: client_credentials
                    token_url: \(server.value("token_url")!)
                    client_id: mirror-cc-client
                    client_secret: "${WRONG}"
                jobs:
                  - { name: items, url: "\(server.base)/api/items?page={page}", records: data, id: id, table: t_item, auth: dot }
                  - { name: others, url: "\(server.base)/api/items?page={page}", records: data, id: id, table: t_other, auth: wrong,
                      retries: 0 }
                """, in: folder, environment: environment)
            #expect(run.status == 1, "\(run.stderr)")
            #expect(run.stdout.hasPrefix("items: ok, 3 pages, 20 records"), "\(run.stdout)")
            #expect(family(parsed, "mirror_token_fetches_total") == [
                #"{auth="dot",outcome="ok"}"#: 1, #"{auth="dot",outcome="failed"}"#: 0,
                #"{auth="wrong",outcome="ok"}"#: 0, #"{auth="wrong",outcome="failed"}"#: 1,
            ])
            for secret in environment.values { #expect(!text.contains(secret)) }
            #expect(!text.contains("Bearer") && !text.contains("127.0.0.1"))
        }
    }

    @Test("--state in S3: a pull and a push with the database's bytes, a lapsed lease taken over; no S3 secret in the file")
    func stateAndLeases() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await AuthServer.withShared("s3_server.py") { s3 in
            let secret = try #require(s3.value("secret_key"))
            let environment = ["AWS_ACCESS_KEY_ID": s3.value("access_key")!, "AWS_SECRET_ACCESS_KEY": secret,
                               "AWS_ENDPOINT_URL_S3": s3.base, "AWS_REGION": "us-east-1"]
            let bucket = "metrics-" + UUID().uuidString.prefix(8).lowercased()
            let client = S3Client(try S3Configuration(url: "s3://\(bucket)", environment: environment),
                                  logger: Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }))
            _ = try await client.exchange("PUT", key: nil)
            try await FixtureServer.with(serve(Once(false))) { server in
                let yaml = jobYAML.replacingOccurrences(of: "BASE", with: server.base)
                let environment = environment.merging(secrets) { $1 }
                let state = ["--state", "s3://\(bucket)/state"]
                let first = try await runMetered(yaml, state + ["--output", "one"], in: folder, environment: environment)
                #expect(first.run.status == 0, "\(first.run.stderr)")
                let manifest = try #require(try await client.get("state/shards/0-of-1/manifest.json")).body
                let databases = try #require(try JSONSerialization.jsonObject(with: Data(manifest)) as? [String: Any])["databases"]
                let size = try #require((databases as? [[String: Any]])?.first?["size"] as? Int)
                #expect(family(first.samples, "mirror_state_transfers_total") == [#"{direction="pull"}"#: 1, #"{direction="push"}"#: 1])
                #expect(family(first.samples, "mirror_state_transfer_bytes_total") == [#"{direction="pull"}"#: 0, #"{direction="push"}"#: Double(size)])
                #expect(family(first.samples, "mirror_state_transfer_duration_seconds_count")
                    == [#"{direction="pull"}"#: 1, #"{direction="push"}"#: 1])
                #expect(first.samples["mirror_lease_takeovers_total{}"] == 0)

                // A worker that died left its lease; once lapsed, an empty folder takes it over and pulls the database.
                let lapsed = #"{"holder":"gone pid 1","token":"0011223344556677","taken_at":"2026-01-01T00:00:00.000Z","expires_at":"2026-01-01T00:01:00.000Z"}"#
                _ = try await client.put("state/shards/0-of-1/lease.json", Array(lapsed.utf8))
                let second = try await runMetered(yaml, state + ["--output", "two"], in: folder, environment: environment)
                #expect(second.run.status == 0, "\(second.run.stderr)")
                #expect(second.samples["mirror_lease_takeovers_total{}"] == 1)
                #expect(second.samples[#"mirror_state_transfer_bytes_total{direction="pull"}"#] == Double(size))
                #expect(second.samples[#"mirror_state_transfers_total{direction="push"}"#] == 1)
                for text in [first.text, second.text] {
                    #expect(!text.contains(secret) && !text.contains(environment["AWS_ACCESS_KEY_ID"]!))
                    for value in secrets.values { #expect(!text.contains(value)) }
                }
            }
        }
    }

    @Test("--shards 2 with JOB_COMPLETION_INDEX=1: the shard's info, 1")
    func shardInfo() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with(serve(Once(false))) { server in
            let yaml = jobYAML.replacingOccurrences(of: "BASE", with: server.base) + "\n    shard: 1\n"
            let (run, parsed, _) = try await runMetered(yaml, ["--shards", "2"], in: folder,
                                                        environment: secrets.merging(["JOB_COMPLETION_INDEX": "1"]) { $1 })
            #expect(run.status == 0, "\(run.stderr)")
            #expect(family(parsed, "mirror_shard_info") == [#"{shard="1",shards="2"}"#: 1])
        }
    }
}
