import Foundation
import MirrorTestSupport
import Testing

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
    case "1": return .json(#"{"data":{"list":[{"id":"10"},{"id":"12"}]}}"#)
    case "2": return .json(#"{"data":{"list":[{"id":"11"}]}}"#)
    default: return .json(#"{"data":{"list":[]}}"#)
    }
}

/// The lines of `stderr`, each parsed as a JSON object; nil for a line that is not one.
private func jsonLines(_ stderr: String) -> [[String: Any]?] {
    stderr.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { line in
        try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    }
}

/// `line` with its `time` member's value replaced by `T`, once it is RFC 3339 UTC with milliseconds.
private func timeless(_ line: Substring) -> String {
    String(line).replacing(#/^\{"time":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z",/#, with: #"{"time":"T","#)
}

@Suite("log formats", .timeLimit(.minutes(6)))
struct LogFormatTests {
    @Test("with --log-format json, or MIRROR_LOG_FORMAT=json, each log event is one JSON object a line: time, level, message, then its fields, counts as numbers")
    func jsonLogs() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with(api) { server in
            try jobYAML.replacingOccurrences(of: "BASE", with: server.base).write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            let key = ["API_KEY": "key-Jv8"]
            let flag = try await mirror(["run", "jobs.yaml", "--log-format", "json"], in: folder, environment: key)
            let variable = try await mirror(["run", "jobs.yaml", "--output", "out2"], in: folder,
                                            environment: key.merging(["MIRROR_LOG_FORMAT": "json"]) { $1 })
            for run in [flag, variable] {
                #expect(run.status == 0)
                #expect(run.stdout.hasPrefix("events: ok, 3 pages, 3 records (3 new, 0 updated, 0 unchanged), stopped: empty page 3, "))
                let lines = run.stderr.split(separator: "\n")
                #expect(lines.map(timeless) == [#"{"time":"T","level":"info","message":"job done","job":"events","pages":3,"stop":"empty page 3"}"#])
                let parsed = jsonLines(run.stderr)
                #expect(parsed.count == 1 && parsed.allSatisfy { $0 != nil })
                let done = try #require(parsed.first ?? nil)
                #expect(done["level"] as? String == "info" && done["message"] as? String == "job done")
                #expect(done["job"] as? String == "events" && done["pages"] as? Int == 3 && done["stop"] as? String == "empty page 3")
                #expect((done["time"] as? String)?.wholeMatch(of: #/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z/#) != nil)
            }

            // Every page with --verbose: its counts are numbers, its URL a string, the key masked.
            let verbose = try await mirror(["run", "jobs.yaml", "--verbose", "--refresh", "--log-format", "json"], in: folder, environment: key)
            #expect(verbose.status == 0)
            #expect(jsonLines(verbose.stderr).allSatisfy { $0 != nil })
            #expect(verbose.stderr.split(separator: "\n").map(timeless) == [1, 2].map { page in
                #"{"time":"T","level":"debug","message":"page stored","job":"events","new":0,"origin":"fetched","page":\#(page),"#
                    + #""records":\#(3 - page),"url":"\#(server.base)/events?page=\#(page)&key=REDACTED"}"#
            } + [#"{"time":"T","level":"info","message":"job done","job":"events","pages":3,"stop":"empty page 3"}"#])
            #expect(!verbose.stderr.contains("key-Jv8"))

            // Where serve listens is an event too (after the server's own).
            let serve = try Child(mirrorBinary.path, ["serve", "--output", "out", "--port", "0", "--log-format", "json"], in: folder,
                                  environment: ProcessInfo.processInfo.environment, stdout: folder + "/serve.out", stderr: folder + "/serve.err")
            var said = ""
            for _ in 0..<2000 {
                said = (try? String(contentsOfFile: folder + "/serve.err", encoding: .utf8)) ?? ""
                if said.contains(#""message":"serving""#) { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            kill(serve.pid, SIGTERM)
            #expect(await serve.ending().status == 0)
            let listening = try #require(jsonLines(said).compactMap { $0 }.first { $0["message"] as? String == "serving" })
            #expect(listening["level"] as? String == "info" && listening["message"] as? String == "serving" && listening["output"] as? String == "out")
            #expect((listening["url"] as? String)?.wholeMatch(of: #/http://127\.0\.0\.1:[0-9]+/_mirror/tables/#) != nil)
            #expect(jsonLines(try String(contentsOfFile: folder + "/serve.err", encoding: .utf8)).allSatisfy { $0 != nil })

            // The flag wins over the variable; text stays the default.
            let text = try await mirror(["run", "jobs.yaml", "--log-format", "text", "--output", "out3"], in: folder,
                                        environment: key.merging(["MIRROR_LOG_FORMAT": "json"]) { $1 })
            let plain = try await mirror(["run", "jobs.yaml", "--output", "out4"], in: folder, environment: key)
            for run in [text, plain] {
                #expect(run.status == 0)
                #expect(run.stderr.replacing(#/^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}[+-][0-9]{4} /#, with: "")
                    == "info mirror: job=events pages=3 stop=empty page 3 job done\n")
            }
        }
    }

    @Test("--log-format xml, or MIRROR_LOG_FORMAT=xml, is a usage error that names the formats, for each command that logs; nothing is fetched")
    func badFormat() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with(api) { server in
            try jobYAML.replacingOccurrences(of: "BASE", with: server.base).write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            let commands = [["run", "jobs.yaml"], ["verify", "jobs.yaml"], ["serve", "jobs.yaml", "--port", "0"],
                            ["publish", "file://\(folder)/published"], ["init", "\(server.base)/events"]]
            for command in commands {
                let flag = try await mirror(command + ["--log-format", "xml"], in: folder, environment: ["API_KEY": "k"],
                                            killAfter: .seconds(30))
                #expect(flag.status == 2, "\(command)")
                #expect(flag.stderr.hasPrefix("Error: --log-format must be text or json, not 'xml'\nUsage: mirror \(command[0]) "), "\(command)")
                let variable = try await mirror(command, in: folder, environment: ["API_KEY": "k", "MIRROR_LOG_FORMAT": "xml"],
                                                killAfter: .seconds(30))
                #expect(variable.status == 2, "\(command)")
                #expect(variable.stderr.hasPrefix("Error: environment variable MIRROR_LOG_FORMAT must be text or json, not 'xml'\nUsage: mirror \(command[0]) "),
                        "\(command)")
            }
            #expect(server.requests.isEmpty)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["jobs.yaml"])
    }
}
