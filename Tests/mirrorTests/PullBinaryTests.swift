import Crypto
import Foundation
@testable import MirrorHTTP
@testable import MirrorModel
import MirrorTestSupport
import Testing

private let jobYAML = """
    version: 1
    jobs:
      - { name: events, url: "BASE/events?page={page}", records: list, id: id, table: t_event }
    """

/// A walked API (`pages` pages of `size` records, `padding` bytes each) in `folder/out`.
private func walked(_ folder: String, pages: Int, size: Int, padding: Int, output: String) async throws {
    let fill = String(repeating: "x", count: padding)
    try await FixtureServer.with({ request in
        let page = Int(request.parameter("page") ?? "") ?? 0
        let ids = page >= 1 && page <= pages ? (0..<size).map { page * 10000 + $0 } : []
        let next = page < pages ? #","next":"\#(request.base)/events?page=\#(page + 1)""# : ""
        return .json(#"{"list":[\#(ids.map { #"{"id":\#($0),"p":"\#(fill)"}"# }.joined(separator: ","))]\#(next)}"#)
    }) { server in
        try jobYAML.replacingOccurrences(of: "BASE", with: server.base).write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
        let ran = try await mirror(["run", "jobs.yaml", "--quiet", "--output", output], in: folder)
        #expect(ran.status == 0, "\(ran.stderr)")
    }
}

/// A `mirror serve --output DIR` process on a free port.
private struct ServedFolder {
    let child: Child
    let port: String

    static func start(_ output: String, in folder: String) async throws -> ServedFolder {
        let log = folder + "/serve-\(UUID().uuidString).err"
        let child = try Child(mirrorBinary.path, ["serve", "--output", output, "--port", "0"], in: folder,
                              environment: ProcessInfo.processInfo.environment, stdout: "/dev/null", stderr: log)
        for _ in 0..<2000 {
            let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if let port = said.firstMatch(of: #/on http://127.0.0.1:([0-9]+)/#).map({ String($0.1) }) {
                return ServedFolder(child: child, port: port)
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        kill(child.pid, SIGKILL)
        _ = await child.ending()
        throw CancellationError()
    }

    /// Status and body of `target`, the server's own address written SERVER.
    func get(_ target: String) async throws -> String {
        let answer = try await HTTPClient().send(HTTPRequest(
            method: "GET", url: RedactedURL(real: "http://127.0.0.1:\(port)\(target)", redactor: .none),
            headers: [], body: nil, timeout: answerTimeout, maxBytes: 16 << 20))
        return "\(answer.status)\n" + String(decoding: answer.body, as: UTF8.self).replacingOccurrences(of: "127.0.0.1:\(port)", with: "SERVER")
    }

    func stop() async {
        kill(child.pid, SIGTERM)
        _ = await child.ending()
    }
}

/// What is wrong with the generation `replica/current` names: each object its record
/// lists must be there, at its size and SHA-256.
private func problems(replica: String) throws -> [String] {
    let current = replica + "/current"
    guard let record = FileManager.default.contents(atPath: current + "/.replica.json") else {
        return FileManager.default.fileExists(atPath: current) ? ["current has no record"] : []
    }
    let objects = (try JSONSerialization.jsonObject(with: record) as? [String: Any])?["objects"] as? [[String: Any]] ?? []
    var problems: [String] = []
    for object in objects {
        let path = object["path"] as? String ?? ""
        guard let data = FileManager.default.contents(atPath: current + "/" + path) else {
            problems.append("\(path) missing")
            continue
        }
        let sha = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
        if data.count != object["bytes"] as? Int || sha != object["sha256"] as? String { problems.append("\(path) is not whole") }
    }
    return problems
}

@Suite("the mirror binary: pull", .timeLimit(.minutes(6)))
struct PullBinaryTests {
    @Test("publish to a folder, pull into another, stop the API: serve answers the API's URLs from the pulled copy as from the output folder")
    func roundTrip() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await walked(folder, pages: 3, size: 5, padding: 10, output: "out")
        let source = try await ServedFolder.start("out", in: folder)
        var expected: [String] = []
        for page in 1...3 { expected.append(try await source.get("/events?page=\(page)")) }
        await source.stop()
        #expect(expected.allSatisfy { $0.hasPrefix("200\n{\"list\":[{\"id\":") })

        let root = folder + "/pub/events"
        let published = try await mirror(["publish", "file://" + root, "--output", "out"], in: folder)
        #expect(published.status == 0, "\(published.stderr)")
        let pulled = try await mirror(["pull", "file://" + root, "--output", "device"], in: folder)
        #expect(pulled.status == 0, "\(pulled.stderr)")
        let line = try #require(pulled.stdout.wholeMatch(of: #/pulled file://(.+): generation ([0-9a-f]{16}), 2 objects fetched \(([0-9]+) bytes\), 0 kept, [0-9]+\.[0-9]{2}s\n/#))
        #expect(String(line.output.1) == root)
        let generation = String(line.output.2)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: folder + "/device/current") == "generations/" + generation)
        #expect(try problems(replica: folder + "/device") == [])

        let again = try await mirror(["pull", root, "--output", "device"], in: folder)
        #expect(again.status == 0)
        #expect(again.stdout.hasPrefix("pulled \(root): generation \(generation), up to date, "))

        let device = try await ServedFolder.start("device", in: folder)
        for page in 1...3 { #expect(try await device.get("/events?page=\(page)") == expected[page - 1], "page \(page)") }
        #expect(try await device.get("/events?page=9").hasPrefix("404\n"))
        await device.stop()

        let wrong = try await mirror(["pull", "ftp://example.com/x", "--output", "device"], in: folder)
        #expect(wrong.status == 2)
        let absent = try await mirror(["pull", folder + "/nowhere", "--output", "device"], in: folder)
        #expect(absent.status == 1)
        #expect(absent.stderr == "error: \(folder)/nowhere/manifest.json: no such file or directory\n")
    }

    @Test("a replica pulled with its files: serve answers /_mirror/files/… from it as from the output folder")
    func filesServed() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await FixtureServer.with({ request in
            if request.path.hasPrefix("/img/") {
                return FixtureResponse(headers: [("Content-Type", "image/png")], body: Array("bytes of \(request.path)".utf8))
            }
            guard request.parameter("page") == "1" else { return .json(#"{"list":[]}"#) }
            return .json(#"{"list":[{"id":1,"cover":"\#(request.base)/img/1.png"}]}"#)
        }) { server in
            try """
                version: 1
                jobs:
                  - { name: events, url: "\(server.base)/events?page={page}", records: list, id: id, table: t_event, downloads: [cover] }
                """.write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            let ran = try await mirror(["run", "jobs.yaml", "--quiet", "--output", "out"], in: folder)
            #expect(ran.status == 0, "\(ran.stderr)")
        }
        let path = try await sqlite(folder + "/out/t_event.sqlite", "SELECT path FROM _mirror_files")
        #expect(path.hasPrefix("files/") && path.hasSuffix(".png\n"))
        let target = "/_mirror/" + path.dropLast()
        let published = try await mirror(["publish", "file://\(folder)/pub", "--output", "out", "--with-files"], in: folder)
        #expect(published.status == 0, "\(published.stderr)")
        let pulled = try await mirror(["pull", "file://\(folder)/pub", "--output", "device"], in: folder)
        #expect(pulled.status == 0, "\(pulled.stderr)")
        for output in ["out", "device"] {
            let served = try await ServedFolder.start(output, in: folder)
            let got = try await served.get(target)
            #expect(got == "200\nbytes of /img/1.png", "\(output)")
            await served.stop()
        }
    }

    @Test("kill -9 during a pull, 20 times at random moments: the replica is always a whole generation, and the next pull finishes")
    func killed() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Two generations of a few megabytes each, published to two prefixes.
        try await walked(folder, pages: 4, size: 1500, padding: 400, output: "one")
        try await walked(folder, pages: 5, size: 1500, padding: 300, output: "two")
        for name in ["one", "two"] {
            let published = try await mirror(["publish", "file://\(folder)/pub/\(name)", "--output", name], in: folder)
            #expect(published.status == 0, "\(published.stderr)")
        }
        var generations: Set<String> = []
        for round in 0..<20 {
            let source = "file://\(folder)/pub/\(round % 2 == 0 ? "one" : "two")"
            let victim = try Child(mirrorBinary.path, ["pull", source, "--output", "device"], in: folder, environment: [:])
            try await Task.sleep(for: .microseconds(Int.random(in: 0..<60_000)))
            kill(victim.pid, SIGKILL)
            _ = await victim.ending()
            #expect(try problems(replica: folder + "/device") == [], "round \(round)")
            if let current = try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/device/current") {
                generations.insert(current)
            }
        }
        for name in ["one", "two"] {
            let finished = try await mirror(["pull", "file://\(folder)/pub/\(name)", "--output", "device"], in: folder)
            #expect(finished.status == 0, "\(finished.stderr)")
            #expect(try problems(replica: folder + "/device") == [])
            let kept = try FileManager.default.contentsOfDirectory(atPath: folder + "/device/generations")
            #expect(kept.count == 1 && !kept[0].hasSuffix(".partial"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder + "/device/partial") == [])
        }
    }
}
