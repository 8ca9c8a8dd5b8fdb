import Foundation
import MirrorCore
@testable import MirrorJobFile
@testable import MirrorModel
import MirrorTestSupport
import Synchronization
import Testing

/// Runs the built `mirror` executable and captures what it printed.
struct Invocation {
    let status: Int32
    let stdout: String
    let stderr: String
}

/// `killAfter`: a child still running then is killed (and ends by SIGKILL).
func mirror(_ arguments: [String], in folder: String, environment: [String: String] = [:],
            killAfter: Duration? = nil) async throws -> Invocation {
    let out = folder + "/.stdout-\(UUID().uuidString)"
    let err = folder + "/.stderr-\(UUID().uuidString)"
    defer {
        try? FileManager.default.removeItem(atPath: out)
        try? FileManager.default.removeItem(atPath: err)
    }
    let child = try Child(mirrorBinary.path, arguments, in: folder,
                          environment: ProcessInfo.processInfo.environment.merging(environment) { $1 }, stdout: out, stderr: err)
    let watchdog = killAfter.map { limit in
        Task {
            try await Task.sleep(for: limit)
            kill(child.pid, SIGKILL)
        }
    }
    let ending = await child.ending()
    watchdog?.cancel()
    return Invocation(status: ending.status,
                      stdout: try String(contentsOfFile: out, encoding: .utf8),
                      stderr: try String(contentsOfFile: err, encoding: .utf8))
}

/// The `mirror` built beside this test bundle.
let mirrorBinary: URL = {
    let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("mirror")
    if FileManager.default.isExecutableFile(atPath: beside.path) { return beside }
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    return root.appendingPathComponent(".build/debug/mirror")
}()

/// Starts `mirror run jobs.yaml --quiet` in the background, output discarded.
func startRun(in folder: String) throws -> Child {
    try Child(mirrorBinary.path, ["run", "jobs.yaml", "--quiet"], in: folder, environment: ["API_KEY": "k"])
}

func temporaryFolder() throws -> String {
    let folder = NSTemporaryDirectory() + "mirror-e2e-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    return folder
}

private let jobYAML = """
    version: 1
    output: out
    jobs:
      - name: events
        url: "BASE/events?page={page}&key=${API_KEY}"
        records: data.list
        id: id
        table: t_event
        concurrency: 1
    """

private let api: @Sendable (FixtureRequest) async -> FixtureResponse = { request in
    switch request.parameter("page") {
    case "1": return .json(#"{"data":{"list":[{"id":"10","city":"Zürich"},{"id":12345678901234567890}]}}"#)
    case "2": return .json(#"{"data":{"list":[{"id":"11","city":"Kraków"}]}}"#)
    case "3": return request.path == "/broken" ? .text("down", status: 503) : .json(#"{"data":{"list":[]}}"#)
    default: return .json(#"{"data":{"list":[]}}"#)
    }
}

@Suite("the mirror binary", .timeLimit(.minutes(6)))
struct BinaryTests {
    @Test("run stores the pages, prints a summary and exits 0; export prints the records")
    func runAndExport() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with(api) { server in
            try jobYAML.replacingOccurrences(of: "BASE", with: server.base).write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            let run = try await mirror(["run", "jobs.yaml"], in: folder, environment: ["API_KEY": "k"])
            #expect(run.status == 0)
            #expect(run.stdout.hasPrefix("events: ok, 3 pages, 3 records (3 new, 0 updated, 0 unchanged), stopped: empty page 3, "))
            // stderr is a pipe, not a terminal: plain log lines, one per job, no progress line.
            #expect(!run.stderr.contains("\u{1B}"))
            // One plain line: time, level, label, metadata, message; no Swift module name.
            #expect(run.stderr.replacing(#/^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}[+-][0-9]{4} /#, with: "")
                == "info mirror: job=events pages=3 stop=empty page 3 job done\n")
            // As cron runs it: a run where every job succeeded prints nothing at all.
            let quiet = try await mirror(["run", "jobs.yaml", "--quiet"], in: folder, environment: ["API_KEY": "k"])
            #expect(quiet.status == 0)
            #expect(quiet.stdout == "")
            #expect(quiet.stderr == "")
        }
        let export = try await mirror(["export", "--table", "t_event", "--output", "out"], in: folder)
        #expect(export.status == 0)
        #expect(export.stdout == """
            {"id":"10","city":"Zürich"}
            {"id":12345678901234567890}
            {"id":"11","city":"Kraków"}

            """)
        let byFile = try await mirror(["export", "--table", "t_event", "--db", "out/t_event.sqlite", "--order", "id", "--limit", "2"], in: folder)
        #expect(byFile.status == 0)
        #expect(byFile.stdout == "{\"id\":12345678901234567890}\n{\"id\":\"11\",\"city\":\"Kraków\"}\n")
        let file = try await mirror(["export", "--table", "t_event", "--output", "out", "--format", "csv", "-o", "x.csv"], in: folder)
        #expect(file.status == 0 && file.stdout == "")
        #expect(try String(contentsOfFile: folder + "/x.csv", encoding: .utf8)
            == "account,_id,id,city\r\n,10,10,Zürich\r\n,12345678901234567890,12345678901234567890,\r\n,11,11,Kraków\r\n")
        let status = try await mirror(["status", "jobs.yaml", "--json"], in: folder, environment: ["API_KEY": "k"])
        #expect(status.status == 0)
        #expect(status.stdout.contains(#""records" : 3"#))
        #expect(status.stdout.contains(#""status" : "ok""#))
        let healthy = try await mirror(["status", "jobs.yaml", "--check"], in: folder, environment: ["API_KEY": "k"])
        #expect(healthy.status == 0)
        #expect(healthy.stdout.contains("job events: last run ") && !healthy.stdout.contains("STALE"))
    }

    @Test("one-letter names work: a job file 'j', an output folder 'o' given relative")
    func oneLetterNames() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with({ _ in .json(#"{"r":[{"id":"1"}]}"#) }) { server in
            try """
                version: 1
                jobs:
                  - { name: a, url: "\(server.base)/x", records: r, id: id, table: t }
                """.write(toFile: folder + "/j", atomically: true, encoding: .utf8)
            let check = try await mirror(["check", "j"], in: folder)
            #expect(check.status == 0 && check.stdout == "j: ok, 1 job\n")
            let run = try await mirror(["run", "j", "--output", "o", "--quiet"], in: folder)
            #expect(run.status == 0 && run.stderr == "")
        }
        #expect(try await sqlite(folder + "/o/t.sqlite", "SELECT id FROM t") == "1\n")
    }

    @Test("--since-id and --max-id take a negative id after a space")
    func negativeIDs() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with({ request in
            .json(request.parameter("page") == "1" ? #"{"data":{"list":[{"id":-5},{"id":-1},{"id":3}]}}"# : #"{"data":{"list":[]}}"#)
        }) { server in
            try jobYAML.replacingOccurrences(of: "BASE", with: server.base).write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            #expect(try await mirror(["run", "jobs.yaml", "--quiet"], in: folder, environment: ["API_KEY": "k"]).status == 0)
        }
        let upTo = try await mirror(["export", "--table", "t_event", "--output", "out", "--max-id", "-1"], in: folder)
        #expect(upTo.status == 0)
        #expect(upTo.stderr == "")
        #expect(upTo.stdout == "{\"id\":-5}\n{\"id\":-1}\n")
        let after = try await mirror(["export", "--table", "t_event", "--output", "out", "--since-id", "-5", "--max-id=3"], in: folder)
        #expect(after.status == 0)
        #expect(after.stdout == "{\"id\":-1}\n{\"id\":3}\n")
    }

    @Test("verify exits 0 on a clean walk and 1 on a fault, writes JUnit XML, and never touches the output folder")
    func verify() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // A secret is masked wherever it occurs in a fault: one as short as "k" would mask words.
        let key = "key-7Q2"
        try await FixtureServer.with(api) { server in
            try jobYAML.replacingOccurrences(of: "BASE", with: server.base).write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            let clean = try await mirror(["verify", "jobs.yaml", "--junit", "walk.xml"], in: folder, environment: ["API_KEY": key])
            #expect(clean.status == 0)
            #expect(clean.stdout.hasPrefix("events: ok, 3 pages, 3 records, ended: empty page 3, "))
            let passed = try String(contentsOfFile: folder + "/walk.xml", encoding: .utf8)
            #expect(passed.contains(#"<testsuite name="jobs.yaml" tests="1" failures="0""#))
            #expect(passed.contains(#"<testcase classname="jobs.yaml" name="events" time=""#) && !passed.contains("<failure"))

            let cut = try await mirror(["verify", "jobs.yaml", "--max-pages", "1", "--junit", "walk.xml"], in: folder,
                                       environment: ["API_KEY": key])
            #expect(cut.status == 1)
            #expect(cut.stdout.hasPrefix("events: 1 fault, 1 page, 2 records, ended: --max-pages 1 reached, "))
            #expect(cut.stdout.hasSuffix("s\n  page 1: the walk was cut by --max-pages 1: the pages after it were not verified\n"))
            let failed = try String(contentsOfFile: folder + "/walk.xml", encoding: .utf8)
            #expect(failed.contains(#"<failure type="page walk" message="1 page-walk fault: page 1: the walk was cut by --max-pages 1"#))
        }
        #expect(!FileManager.default.fileExists(atPath: folder + "/out"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted() == ["jobs.yaml", "walk.xml"])
    }

    @Test("verify masks a secret the URL holds and the server echoes, in stdout, stderr and the JUnit file")
    func verifyRedacts() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let secret = "s3cr3t-XYZ"
        try await FixtureServer.with({ request in
            let key = request.parameter("key") ?? ""
            switch request.parameter("page") {
            case "1": return .json(#"{"data":{"list":[{"id":"k-\#(key)"},{"id":"k-\#(key)"}]}}"#)
            default: return .text("<html>\(key)</html>", status: 500, contentType: "text/html")
            }
        }) { server in
            let yaml = jobYAML.replacingOccurrences(of: "BASE", with: server.base) + "\n    retries: 0\n"
            try yaml.write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            let verify = try await mirror(["verify", "jobs.yaml", "--junit", "walk.xml"], in: folder, environment: ["API_KEY": secret])
            #expect(verify.status == 1)
            #expect(verify.stdout.replacing(#/, [0-9]+\.[0-9]{2}s\n/#, with: ", Ts\n") == """
                events: 2 faults, 1 page, 1 records, ended: failed, Ts
                  page 1: id 'k-REDACTED' appears 2 times (records 0, 1)
                  page 2: GET \(server.base)/events?page=2&key=REDACTED: HTTP 500: unexpected status (internal server error)

                """)
            #expect(server.requests.map(\.target) == ["/events?page=1&key=\(secret)", "/events?page=2&key=\(secret)"])
            let junit = try String(contentsOfFile: folder + "/walk.xml", encoding: .utf8)
            #expect(junit.contains("page 2: GET \(server.base)/events?page=2&amp;key=REDACTED: HTTP 500: unexpected status (internal server error)</failure>"))
            #expect(!verify.stdout.contains(secret))
            #expect(!verify.stderr.contains(secret))
            #expect(!junit.contains(secret))
            // Masked the same in JSON logs, every page logged: each line one JSON object.
            let json = try await mirror(["verify", "jobs.yaml", "--verbose", "--log-format", "json"], in: folder,
                                        environment: ["API_KEY": secret])
            #expect(json.status == 1)
            let lines = json.stderr.split(separator: "\n")
            #expect(!lines.isEmpty && lines.allSatisfy { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) is [String: Any] })
            #expect(!json.stdout.contains(secret))
            #expect(!json.stderr.contains(secret))
        }
        #expect(!FileManager.default.fileExists(atPath: folder + "/out"))
    }

    @Test("a failed job exits 1 and names job, redacted URL, status and what was kept")
    func failedRun() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with(api) { server in
            let yaml = jobYAML.replacingOccurrences(of: "BASE/events", with: server.base + "/broken") + "\n    retries: 1\n"
            try yaml.write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            let run = try await mirror(["run", "jobs.yaml", "--quiet", "--report", "report.json"], in: folder,
                                       environment: ["API_KEY": "hunter2"])
            #expect(run.status == 1)
            let text = try String(contentsOfFile: folder + "/report.json", encoding: .utf8)
            #expect(!text.contains("hunter2"))
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            let report = try decoder.decode(RunReport.self, from: Data(text.utf8))
            #expect(report.exitStatus == 1)
            let job = try #require(report.jobs.first)
            #expect(job.job == "events" && job.status == .failed && job.table == "t_event" && job.file == "jobs.yaml")
            #expect(job.stopReason == "failed" && !job.complete)
            #expect(job.pages.total == 2 && job.pages.fetched == 2 && job.pages.notModified == 0 && job.pages.skipped == 0)
            #expect(job.retries == 1)
            let records = job.records
            let counts: [Int] = [records.new, records.updated, records.unchanged, records.rejected, records.pruned]
            #expect(counts == [3, 0, 0, 0, 0])
            #expect(job.bytes == 76 + 48)
            let expected: String = "job 'events': GET \(server.base)/broken?page=3&key=REDACTED: HTTP 503: unexpected status (service unavailable): down (after 1 retry); page 3 not stored, pages 1-2 kept"
            #expect(job.error == expected)
            #expect(run.stdout == "events: FAILED: job 'events': GET \(server.base)/broken?page=3&key=REDACTED: HTTP 503: unexpected status (service unavailable): down (after 1 retry); page 3 not stored, pages 1-2 kept\n")
            #expect(server.requests.map(\.target).suffix(2) == ["/broken?page=3&key=hunter2", "/broken?page=3&key=hunter2"])
            #expect(!run.stderr.contains("hunter2"))
            let status = try await mirror(["status", "jobs.yaml", "--check"], in: folder, environment: ["API_KEY": "k"])
            #expect(status.status == 1)
            #expect(status.stderr == "")
            #expect(status.stdout.contains(" failed, 2 pages, 3 new, 0 updated, 0 unchanged, stopped: failed, STALE\n"))
            let plain = try await mirror(["status", "jobs.yaml"], in: folder, environment: ["API_KEY": "k"])
            #expect(plain.status == 0)
            #expect(plain.stdout == status.stdout)
            // Masked the same in JSON logs, each retry logged: the error as the summary says it (this run kept nothing new).
            let json = try await mirror(["run", "jobs.yaml", "--verbose", "--log-format", "json"], in: folder,
                                        environment: ["API_KEY": "hunter2"])
            #expect(json.status == 1)
            let lines = json.stderr.split(separator: "\n")
            #expect(lines.allSatisfy { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) is [String: Any] })
            #expect(lines.contains { $0.contains(#""message":"retrying","attempt":1,"cause":"#) && $0.contains(#""http.status":503,"job":"events","#) })
            #expect(lines.last?.replacing(#/^\{"time":"[0-9T:.-]{23}Z",/#, with: "{") == #"{"level":"error","message":"job failed","error":"\#(expected.replacingOccurrences(of: "pages 1-2 kept", with: "nothing stored"))","job":"events"}"#)
            #expect(!json.stderr.contains("hunter2"))
        }
    }

    @Test("config errors print FILE:LINE:COLUMN and exit 2 before any request")
    func configErrors() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with(api) { server in
            let yaml = jobYAML.replacingOccurrences(of: "BASE", with: server.base).replacingOccurrences(of: "    id: id", with: "    idd: id")
            try yaml.write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            let run = try await mirror(["run", "jobs.yaml"], in: folder, environment: ["API_KEY": "k"])
            #expect(run.status == 2)
            #expect(run.stdout == "")
            #expect(run.stderr == """
                jobs.yaml:4:5: job 'events' is missing required key 'id'
                jobs.yaml:7:5: unknown key 'idd' in job (did you mean 'id'?)

                """)
            #expect(server.requests.isEmpty)
            let check = try await mirror(["check", "jobs.yaml"], in: folder, environment: ["API_KEY": "k"])
            #expect(check.status == 2)
            #expect(check.stderr == run.stderr)
        }
        #expect(!FileManager.default.fileExists(atPath: folder + "/out"))
    }

    @Test("numbers that would overflow a walk, a clock or a buffer are config errors for check and run, exit 2")
    func numbersOutOfRange() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with(api) { server in
            let yaml = jobYAML.replacingOccurrences(of: "BASE", with: server.base) + """

                    pages: { from: 9223372036854775800, step: 9223372036854775807 }
                    timeout: 9999999999999999999999d
                    retries: 9223372036854775807
                    max_page_size: 99999999999999999999GB
                """
            try yaml.write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            let expected = """
                jobs.yaml:10:20: 'pages.from' must be between 0 and 1000000000000, not 9223372036854775800
                jobs.yaml:10:47: 'pages.step' must be between 1 and 1000000, not 9223372036854775807
                jobs.yaml:11:14: 'timeout' must be between 1ms and 7d, not '9999999999999999999999d'
                jobs.yaml:12:14: 'retries' must be between 0 and 100, not 9223372036854775807
                jobs.yaml:13:20: 'max_page_size' must be between 1B and 1GB, not '99999999999999999999GB'

                """
            let check = try await mirror(["check", "jobs.yaml"], in: folder, environment: ["API_KEY": "k"])
            #expect(check.status == 2)
            #expect(check.stdout == "")
            #expect(check.stderr == expected)
            let run = try await mirror(["run", "jobs.yaml"], in: folder, environment: ["API_KEY": "k"])
            #expect(run.status == 2)
            #expect(run.stderr == expected)
            #expect(server.requests.isEmpty)
        }
        #expect(!FileManager.default.fileExists(atPath: folder + "/out"))
    }

    @Test("an output folder that is a file: a config error from the job file, a usage error from --output; exit 2")
    func outputIsAFile() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try "not a folder".write(toFile: folder + "/out", atomically: true, encoding: .utf8)
        try await FixtureServer.with(api) { server in
            try jobYAML.replacingOccurrences(of: "BASE", with: server.base).write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            for command in ["check", "run"] {
                let fromFile = try await mirror([command, "jobs.yaml"], in: folder, environment: ["API_KEY": "k"])
                #expect(fromFile.status == 2)
                #expect(fromFile.stdout == "")
                #expect(fromFile.stderr == "jobs.yaml:2:9: output folder 'out' is a file\n")
            }
            try jobYAML.replacingOccurrences(of: "BASE", with: server.base).replacingOccurrences(of: "output: out", with: "output: cache")
                .write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            let fromOption = try await mirror(["run", "jobs.yaml", "--output", "out"], in: folder, environment: ["API_KEY": "k"])
            #expect(fromOption.status == 2)
            #expect(fromOption.stdout == "")
            #expect(fromOption.stderr == "error: output folder 'out' is a file\n")
            let inside = try await mirror(["run", "jobs.yaml", "--output", "out/today"], in: folder, environment: ["API_KEY": "k"])
            #expect(inside.status == 2)
            #expect(inside.stderr == "error: output folder 'out/today' cannot be made: 'out' is a file\n")
            #expect(server.requests.isEmpty)
        }
        #expect(try String(contentsOfFile: folder + "/out", encoding: .utf8) == "not a folder")
        #expect(!FileManager.default.fileExists(atPath: folder + "/cache"))
    }

    @Test("a job file that is not UTF-8 is a config error at its first bad byte, exit 2")
    func notUTF8() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let text = Array(jobYAML.replacingOccurrences(of: "BASE", with: "http://127.0.0.1:9").utf8)
        // "Zürich" in Latin-1, in a comment after the first two lines.
        let firstTwoLines = text.split(separator: UInt8(ascii: "\n"), maxSplits: 2, omittingEmptySubsequences: false)
        let latin1 = Array(firstTwoLines[0]) + [0x0A] + Array(firstTwoLines[1]) + [0x0A]
            + Array("# Z".utf8) + [0xFC] + Array("rich\n".utf8) + Array(firstTwoLines[2])
        try Data(latin1).write(to: URL(fileURLWithPath: folder + "/jobs.yaml"))
        for command in ["check", "run"] {
            let invocation = try await mirror([command, "jobs.yaml"], in: folder, environment: ["API_KEY": "k"])
            #expect(invocation.status == 2)
            #expect(invocation.stdout == "")
            #expect(invocation.stderr == "jobs.yaml:3:4: not UTF-8 text (byte 0xfc)\n")
        }
        #expect(!FileManager.default.fileExists(atPath: folder + "/out"))
    }

    @Test("check and run refuse an alias bomb in a POST body at once, exit 2", .timeLimit(.minutes(6)))
    func aliasBomb() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Nine nested lists of ten aliases each: 10⁹ values once expanded.
        let names = "abcdefghi".map(String.init)
        var bomb = [#"      a: &a ["x","x","x","x","x","x","x","x","x","x"]"#]
        for (previous, name) in zip(names, names.dropFirst()) {
            bomb.append("      \(name): &\(name) [" + Array(repeating: "*\(previous)", count: 10).joined(separator: ",") + "]")
        }
        let yaml = jobYAML.replacingOccurrences(of: "BASE", with: "http://127.0.0.1:9") + "\n    method: POST\n    body:\n"
            + bomb.joined(separator: "\n") + "\n"
        try yaml.write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
        for command in ["check", "run"] {
            let invocation = try await mirror([command, "jobs.yaml"], in: folder, environment: ["API_KEY": "k"],
                                              killAfter: .seconds(20))
            #expect(invocation.status == 2)
            #expect(invocation.stdout == "")
            #expect(invocation.stderr == "jobs.yaml:15:10: aliases here expand to more than 10000 values\n")
        }
        #expect(!FileManager.default.fileExists(atPath: folder + "/out"))
    }

    @Test("--parallel takes 1 to 256: a larger width is a usage error, exit 2; 256 runs and ends", .timeLimit(.minutes(6)))
    func parallelBounds() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with(api) { server in
            try jobYAML.replacingOccurrences(of: "BASE", with: server.base).write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            for width in ["9223372036854775807", "257", "0"] {
                let wide = try await mirror(["run", "jobs.yaml", "--parallel", width], in: folder, environment: ["API_KEY": "k"],
                                            killAfter: .seconds(20))
                #expect(wide.status == 2)
                #expect(wide.stdout == "")
                #expect(wide.stderr.hasPrefix("Error: --parallel must be between 1 and 256, not \(width)\nUsage: mirror run "))
            }
            #expect(server.requests.isEmpty)
            let widest = try await mirror(["run", "jobs.yaml", "--parallel", "256", "--quiet"], in: folder,
                                          environment: ["API_KEY": "k"], killAfter: .seconds(20))
            #expect(widest.status == 0)
            #expect(widest.stdout == "" && widest.stderr == "")
        }
    }

    @Test("check accepts a good file; usage errors exit 2")
    func checkAndUsage() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try jobYAML.replacingOccurrences(of: "BASE", with: "http://127.0.0.1:9").write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
        let check = try await mirror(["check", "jobs.yaml"], in: folder, environment: ["API_KEY": "k"])
        #expect(check.status == 0)
        #expect(check.stdout == "jobs.yaml: ok, 1 job\n")
        let neverRun = try await mirror(["status", "jobs.yaml", "--check"], in: folder, environment: ["API_KEY": "k"])
        #expect(neverRun.status == 1)
        #expect(neverRun.stdout == "output: out\nno tables yet\njob events: never run, STALE\n")
        #expect(try await mirror(["run", "jobs.yaml", "--bogus"], in: folder).status == 2)
        #expect(try await mirror(["frobnicate"], in: folder).status == 2)
        let unknownJob = try await mirror(["run", "jobs.yaml", "--job", "nope"], in: folder, environment: ["API_KEY": "k"])
        #expect(unknownJob.status == 2)
        #expect(unknownJob.stderr == "error: no job named 'nope' in jobs.yaml\n")
        let misspelt = try await mirror(["run", "jobs.yaml", "--job", "evnets"], in: folder, environment: ["API_KEY": "k"])
        #expect(misspelt.status == 2)
        #expect(misspelt.stdout == "")
        #expect(misspelt.stderr == "error: no job named 'evnets' in jobs.yaml (did you mean 'events'?)\n")
        for command in ["check", "run", "verify", "status"] {
            let folderGiven = try await mirror([command, "."], in: folder, environment: ["API_KEY": "k"])
            #expect(folderGiven.status == 2)
            #expect(folderGiven.stdout == "")
            #expect(folderGiven.stderr == "error: '.' is a directory, not a job file\n")
        }
        let missingTable = try await mirror(["export", "--table", "t_x", "--output", "nowhere"], in: folder)
        #expect(missingTable.status == 1)
        #expect(missingTable.stderr == "error: no output folder 'nowhere': run `mirror run` first, or name the folder with --output\n")
    }

    @Test("every help text says the exit statuses and where the job-file reference is")
    func helpTexts() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let expected: [[String]: String] = [
            ["--help"]: "Exit status: 0 success; 1 a job failed (run), a page-walk fault was found (verify),",
            ["help", "run"]: "Exit status: 0 every job succeeded; 1 at least one job failed (the others still ran), or the state could not be pulled or pushed;",
            ["verify", "--help"]: "Exit status: 0 no fault; 1 at least one fault; 2 usage or config error; 130, 143 or 129: stopped by SIGINT, SIGTERM or SIGHUP",
            ["status", "--help"]: "Exit status: 0 shown (with --check: and no job listed is failed or stale); 1 an output",
            ["check", "--help"]: "Exit status: 0 every file is valid; 2 a config or usage error.",
            ["export", "--help"]: "Exit status: 0 exported; 1 the table or database could not be found or read,",
            ["publish", "--help"]: "Exit status: 0 published; 1 the snapshot could not be made, an object could not be uploaded,",
        ]
        for (arguments, exitStatus) in expected {
            let help = try await mirror(arguments, in: folder)
            #expect(help.status == 0)
            #expect(help.stderr == "")
            // The text is wrapped to the terminal's width: compare it unwrapped.
            let text = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(text.contains(exitStatus), "\(arguments)")
            // export and publish read no job file.
            if !["export", "publish"].contains(arguments[0]) {
                #expect(text.contains(#"Job files: docs/job-files.md describes every key, its type and default"#), "\(arguments)")
            }
        }
        // No help text is cut by a line continuation written twice.
        for command in ["run", "export", "snapshot", "publish", "serve", "verify", "status", "check", "plan", "schema", "infer", "init"] {
            let help = try await mirror([command, "--help"], in: folder)
            #expect(help.status == 0 && !help.stdout.contains("\\"), "\(command)")
        }
        let schema = try await mirror(["schema", "--help"], in: folder)
        #expect(schema.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            .contains(#"VS Code (with the YAML extension) and other editors then complete keys and flag mistakes. Exit status: 0. Job files: docs/job-files.md describes"#))
    }
}

@Suite("the output folder lock", .timeLimit(.minutes(6)))
struct LockTests {
    @Test("a second run exits 3 at once naming the holder; a killed holder leaves no stale lock")
    func secondRunExits3() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let slow = SlowGate()
        try await FixtureServer.with({ request in
            while request.parameter("page") == "1", slow.isClosed, !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(50))
            }
            return .json(#"{"data":{"list":[]}}"#)
        }) { server in
            // The server's shutdown waits for the held request, however the test ends.
            defer { slow.open() }
            try jobYAML.replacingOccurrences(of: "BASE", with: server.base).write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            let holder = try startRun(in: folder)
            // The holder has the lock once its first request arrives.
            while server.requests.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
            let second = try await mirror(["run", "jobs.yaml"], in: folder, environment: ["API_KEY": "k"])
            #expect(second.status == 3)
            #expect(second.stdout == "")
            #expect(second.stderr == "error: another mirror run (pid \(holder.pid)) holds the lock on 'out'\n")
            #expect(server.requests.count == 1)
            kill(holder.pid, SIGKILL)
            _ = await holder.ending()
            slow.open()
            let third = try await mirror(["run", "jobs.yaml"], in: folder, environment: ["API_KEY": "k"])
            #expect(third.status == 0)
            #expect(third.stdout.hasPrefix("events: ok, 1 page, 0 records"))
        }
    }

    @Test("a lock file that is a symbolic link is refused with exit 1, before any request; what it points to keeps its bytes")
    func linkedLockFile() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let precious = Array("precious\ncontent\n".utf8)
        try Data(precious).write(to: URL(fileURLWithPath: folder + "/outside.txt"))
        try FileManager.default.createDirectory(atPath: folder + "/out", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: folder + "/out/.mirror.lock", withDestinationPath: folder + "/outside.txt")
        try await FixtureServer.with(api) { server in
            try jobYAML.replacingOccurrences(of: "BASE", with: server.base).write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            let run = try await mirror(["run", "jobs.yaml"], in: folder, environment: ["API_KEY": "k"])
            #expect(run.status == 1)
            #expect(run.stdout == "")
            #expect(run.stderr == "error: cannot lock the output folder 'out': '.mirror.lock' is a symbolic link; "
                + "mirror does not follow links in its output folder\n")
            #expect(server.requests.isEmpty)
        }
        #expect(FileManager.default.contents(atPath: folder + "/outside.txt").map { Array($0) } == precious)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: folder + "/out/.mirror.lock") == folder + "/outside.txt")
    }
}

/// Holds page 1 of the fixture back until opened.
final class SlowGate: Sendable {
    private let closed = Mutex(true)
    var isClosed: Bool { closed.withLock { $0 } }
    func open() { closed.withLock { $0 = false } }
}

@Suite("a killed run", .timeLimit(.minutes(6)))
struct KillTests {
    @Test("kill -9 mid-walk leaves whole pages and a sound database; the rerun ends with exactly the right ids")
    func sigkill() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let gate = SlowGate()
        // 6 pages of 50 records; page 4 is held until the gate opens.
        let pageIDs = (1...6).map { page in (0..<50).map { "\(page * 1000 + $0)" } }
        try await FixtureServer.with({ request in
            let page = Int(request.parameter("page") ?? "") ?? 0
            while page == 4, gate.isClosed, !Task.isCancelled { try? await Task.sleep(for: .milliseconds(20)) }
            let ids = page >= 1 && page <= 6 ? pageIDs[page - 1] : []
            return .json(#"{"data":{"list":[\#(ids.map { #"{"id":"\#($0)","body":"\#(String(repeating: "x", count: 200))"}"# }.joined(separator: ","))]}}"#)
        }) { server in
            defer { gate.open() }
            try jobYAML.replacingOccurrences(of: "BASE", with: server.base).write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            let victim = try startRun(in: folder)
            while !server.requests.contains(where: { $0.parameter("page") == "4" }) {
                try await Task.sleep(for: .milliseconds(10))
            }
            kill(victim.pid, SIGKILL)
            #expect(await victim.ending() == .signaled(SIGKILL))

            let check = try await mirror(["export", "--table", "t_event", "--output", "out"], in: folder)
            let stored = Set(check.stdout.split(separator: "\n").map { line in
                String(line.split(separator: "\"")[3])
            })
            // Only whole pages: pages 1-2 or pages 1-3, never part of one.
            let wholePages = [2, 3].map { Set(pageIDs.prefix($0).joined()) }
            #expect(wholePages.contains(stored))
            let integrity = try await sqlite(folder + "/out/t_event.sqlite", "PRAGMA integrity_check")
            #expect(integrity == "ok\n")

            gate.open()
            let rerun = try await mirror(["run", "jobs.yaml"], in: folder, environment: ["API_KEY": "k"])
            #expect(rerun.status == 0)
            #expect(rerun.stdout.contains(", resumed at page \(stored.count / 50 + 1), "))
        }
        let all = try await sqlite(folder + "/out/t_event.sqlite", "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM t_event")
        #expect(all == "300|300|1000|6049\n")
        let ids = try await sqlite(folder + "/out/t_event.sqlite", "SELECT id FROM t_event ORDER BY position")
        #expect(ids == pageIDs.joined().map { $0 + "\n" }.joined())
    }
}

/// Runs the sqlite3 shell on a database (the way a device or an operator reads it).
func sqlite(_ database: String, _ sql: String) async throws -> String {
    let out = NSTemporaryDirectory() + "sqlite-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: out) }
    let child = try Child("/usr/bin/sqlite3", ["-readonly", database, sql], in: "/", environment: [:], stdout: out)
    _ = await child.ending()
    return try String(contentsOfFile: out, encoding: .utf8)
}
