import Foundation
import Testing

/// The repository this test was built from.
private let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

@Suite("the sample job as shipped", .timeLimit(.minutes(6)))
struct SampleJobTests {
    @Test("the run command in jobs/sample.yaml's opening comment, with the variables it sets, stores the sample API's 42 events, which the export command after it reads")
    func commentedRun() async throws {
        let text = try String(contentsOfFile: repository + "/jobs/sample.yaml", encoding: .utf8)
        let command = try #require(text.split(separator: "\n").first { $0.hasPrefix("#") && $0.contains("mirror run jobs/sample.yaml") })
        // `#   NAME=value NAME=value mirror run jobs/sample.yaml`: the variables set before `mirror`.
        let words = command.dropFirst().split(separator: " ")
        var variables: [String: String] = [:]
        for word in words.prefix(while: { $0 != "mirror" }) {
            let parts = word.split(separator: "=", maxSplits: 1)
            try #require(parts.count == 2, "\(word) in \(command)")
            variables[String(parts[0])] = String(parts[1])
        }
        #expect(variables.keys.sorted() == ["SAMPLE_PORT", "SAMPLE_SALT"])

        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder + "/jobs", withIntermediateDirectories: true)
        try text.write(toFile: folder + "/jobs/sample.yaml", atomically: true, encoding: .utf8)
        let portFile = folder + "/sample-api.port"
        let api = try Child("python3", [repository + "/scripts/sample-api.py", "--port", "0", "--port-file", portFile],
                            in: folder, environment: ProcessInfo.processInfo.environment)
        defer {
            kill(api.pid, SIGKILL)
            _ = waitpid(api.pid, nil, 0)
        }
        var waited = 0
        while !FileManager.default.fileExists(atPath: portFile) {
            try #require(waited < 3000, "scripts/sample-api.py did not write its port in 30 s")
            try await Task.sleep(for: .milliseconds(10))
            waited += 1
        }
        variables["SAMPLE_PORT"] = try String(contentsOfFile: portFile, encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)

        let ran = try await mirror(["run", "jobs/sample.yaml", "--quiet"], in: folder, environment: variables)
        #expect(ran.status == 0, "\(ran.stdout)\(ran.stderr)")
        #expect(ran.stderr == "")
        // The comment's next command, and the whole table: 42 events, one JSON object a line.
        let exportLine = try #require(text.split(separator: "\n").first { $0.hasPrefix("#") && $0.contains("mirror export") })
        let arguments = exportLine.split(separator: " ").drop { $0 != "mirror" }.dropFirst().map(String.init)
        #expect(arguments == ["export", "--table", "t_event", "--limit", "3"])
        let three = try await mirror(arguments, in: folder)
        #expect(three.status == 0, "\(three.stderr)")
        #expect(three.stdout.split(separator: "\n").count == 3)
        let all = try await mirror(["export", "--table", "t_event"], in: folder)
        let ids = all.stdout.split(separator: "\n").map { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["id"] as? String
        }
        #expect(ids.count == 42)
        #expect(Set(ids.compactMap { $0 }).count == 42)
    }
}
