import Crypto
import Foundation
@testable import MirrorHTTP
@testable import MirrorModel
import MirrorTestSupport
import Synchronization
import Testing

private let feedJobs = """
    version: 1
    jobs:
      - { name: events, url: "BASE/events?page={page}", records: list, id: id, table: t_event, prune: true }
      - { name: comments, parent: events, url: "BASE/events/{parent.id}/comments", records: comments, id: id, table: t_comment }
    """

/// Events, two to a page, each with its comments; changed between walks.
private final class EventsAPI: Sendable {
    struct Data: Sendable {
        var events: [String]
        var comments: [String: [String]]
    }

    let data: Mutex<Data>

    init(_ data: Data) { self.data = Mutex(data) }

    func set(_ data: Data) { self.data.withLock { $0 = data } }

    var handler: @Sendable (FixtureRequest) async -> FixtureResponse {
        { request in
            let data = self.data.withLock { $0 }
            if request.path == "/events" {
                let page = Int(request.parameter("page") ?? "") ?? 0
                let events = page >= 1 ? Array(data.events.dropFirst((page - 1) * 2).prefix(2)) : []
                return .json(#"{"list":[\#(events.joined(separator: ","))]}"#)
            }
            let id = request.path.split(separator: "/").dropFirst().first.map(String.init) ?? ""
            return .json(#"{"comments":[\#((data.comments[id] ?? []).joined(separator: ","))]}"#)
        }
    }
}

private func event(_ id: Int, _ version: Int) -> String { #"{"id":\#(id),"title":"event \#(id)","v":\#(version),"n":123456789012345678901234567890}"# }
private func comment(_ id: String, _ text: String) -> String { #"{"id":"\#(id)","text":"\#(text)"}"# }

private let first = EventsAPI.Data(events: (1...6).map { event($0, 1) },
                                   comments: ["1": [comment("1-1", "first")], "3": [comment("3-1", "hello")]])
// 2 changed, 5 gone (pruned), 7 and 8 new, and a comment of 7 (the child job walks new events only).
private let second = EventsAPI.Data(events: [1, 2, 3, 4, 6, 7, 8].map { event($0, $0 == 2 ? 2 : 1) },
                                    comments: ["1": [comment("1-1", "first")], "3": [comment("3-1", "hello again")],
                                               "7": [comment("7-1", "new")]])
// 1 changed.
private let third = EventsAPI.Data(events: [1, 2, 3, 4, 6, 7, 8].map { event($0, $0 == 2 || $0 == 1 ? 2 : 1) },
                                   comments: second.comments)

/// The rows of a database's record tables (account, id, parent, JSON) and of its
/// `_mirror_snapshot` (table, mark, feed, account, records), as `sqlite3` prints them.
private func dump(_ database: String) async throws -> String {
    let child = database.hasSuffix("t_comment.sqlite")
    return try await sqlite(database, """
        SELECT table_name, changes_through, feed, quote(account), records FROM _mirror_snapshot ORDER BY table_name;
        SELECT account, id, \(child ? "parent_id" : "''"), record FROM \(child ? "t_comment" : "t_event") ORDER BY account, id;
        """)
}

/// `dump` of each of `tables` in `folder`.
private func dump(_ tables: [String], in folder: String) async throws -> [String] {
    var dumps: [String] = []
    for table in tables { dumps.append(try await dump(folder + "/" + table)) }
    return dumps
}

/// What is wrong with the generation `replica/current` names: each object its record lists
/// must be there, at its size and SHA-256.
private func problems(replica: String) throws -> [String] {
    let current = replica + "/current"
    guard let record = FileManager.default.contents(atPath: current + "/.replica.json") else { return ["current has no record"] }
    let objects = (try JSONSerialization.jsonObject(with: record) as? [String: Any])?["objects"] as? [[String: Any]] ?? []
    return objects.compactMap { object in
        let path = object["path"] as? String ?? ""
        guard let data = FileManager.default.contents(atPath: current + "/" + path) else { return "\(path) missing" }
        let sha = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
        return data.count == object["bytes"] as? Int && sha == object["sha256"] as? String ? nil : "\(path) is not whole"
    }
}

/// A `mirror serve --output DIR` process on a free port.
private struct Serve {
    let child: Child
    let base: String

    static func start(_ output: String, in folder: String, _ more: [String] = []) async throws -> Serve {
        let log = folder + "/serve-\(UUID().uuidString).err"
        let child = try Child(mirrorBinary.path, ["serve", "--output", output, "--port", "0"] + more, in: folder,
                              environment: ProcessInfo.processInfo.environment, stdout: "/dev/null", stderr: log)
        for _ in 0..<2000 {
            let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if let port = said.firstMatch(of: #/on http://127.0.0.1:([0-9]+)/#).map({ String($0.1) }) {
                return Serve(child: child, base: "http://127.0.0.1:\(port)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        kill(child.pid, SIGKILL)
        _ = await child.ending()
        throw CancellationError()
    }

    /// Status and body of `target`.
    func get(_ target: String) async throws -> String {
        let answer = try await HTTPClient().send(HTTPRequest(
            method: "GET", url: RedactedURL(real: base + target, redactor: .none),
            headers: [], body: nil, timeout: answerTimeout, maxBytes: 16 << 20))
        return "\(answer.status)\n" + String(decoding: answer.body, as: UTF8.self)
    }

    func stop() async {
        kill(child.pid, SIGTERM)
        _ = await child.ending()
    }
}

@Suite("the mirror binary: a replica caught up through serve's change feed", .timeLimit(.minutes(8)))
struct FeedCatchUpTests {
    @Test("the feed applied to a pulled copy equals a fresh snapshot, table by table; unchanged, it makes no generation; compacted or of another feed, the source is pulled whole")
    func caughtUp() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let api = EventsAPI(first)
        let tables = ["t_comment.sqlite", "t_event.sqlite"]
        func walk() async throws {
            let ran = try await mirror(["run", "jobs.yaml", "--quiet", "--output", "out"], in: folder)
            #expect(ran.status == 0, "\(ran.stderr)")
        }
        func publish() async throws {
            let published = try await mirror(["publish", "file://\(folder)/pub", "--output", "out"], in: folder)
            #expect(published.status == 0, "\(published.stderr)")
        }
        func snapshot(_ name: String, _ more: [String] = []) async throws {
            let made = try await mirror(["snapshot", name, "--output", "out"] + more, in: folder)
            #expect(made.status == 0, "\(made.stderr)")
        }
        func current() throws -> String {
            try FileManager.default.destinationOfSymbolicLink(atPath: folder + "/device/current")
        }
        try await FixtureServer.with(api.handler) { server in
            try feedJobs.replacingOccurrences(of: "BASE", with: server.base)
                .write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            try await walk()
            try await publish()
            let pulled = try await mirror(["pull", "file://\(folder)/pub", "--output", "device"], in: folder)
            #expect(pulled.status == 0, "\(pulled.stderr)")
            let pulledGeneration = try current()
            let before = try await dump(tables, in: folder + "/device/current")

            // A reader holds the pulled generation while the replica catches up (close-on-exec: a
            // process another test starts meanwhile must not inherit the lock and keep it).
            let readers = open(folder + "/device/" + pulledGeneration + "/.readers", O_RDONLY | O_CLOEXEC)
            #expect(flock(readers, LOCK_SH) == 0)

            api.set(second)
            try await walk()
            var serve = try await Serve.start("out", in: folder)
            // A serve still running when an expectation stops the test early is killed.
            var running = [serve.child.pid]
            defer { for pid in running { kill(pid, SIGKILL) } }
            let caught = try await mirror(["pull", "file://\(folder)/pub", "--output", "device", "--changes-from", serve.base],
                                          in: folder)
            #expect(caught.status == 0, "\(caught.stderr)")
            #expect(caught.stderr == "")
            let line = try #require(caught.stdout.wholeMatch(
                of: #/caught up from (.+): generation ([0-9a-f]{16}), ([0-9]+) changes applied, [0-9]+\.[0-9]{2}s\n/#))
            #expect(line.output.3 == "5")
            #expect(String(line.output.1) == serve.base)
            let caughtGeneration = try current()
            #expect(caughtGeneration == "generations/" + line.output.2)
            try await snapshot("fresh")
            for table in tables {
                #expect(try await dump(folder + "/device/current/" + table) == dump(folder + "/fresh/" + table), "\(table)")
            }
            #expect(try await dump(folder + "/device/current/t_event.sqlite").contains(#"|7||{"id":7,"title":"event 7","v":1,"n":123456789012345678901234567890}"#))

            let device = try await Serve.start("device", in: folder)
            running.append(device.child.pid)
            // The pages of the last full pull, each with its records as the replica holds them now:
            // 2 changed, 5 left out; 7 and 8 are on none of them.
            #expect(try await device.get("/events?page=1") == #"200\#n{"list":[\#(event(1, 1)),\#(event(2, 2))]}"#)
            #expect(try await device.get("/events?page=3") == #"200\#n{"list":[\#(event(6, 1))]}"#)
            #expect(try await device.get("/events?page=4") == #"200\#n{"list":[]}"#)
            await device.stop()
            running.removeLast()

            // The held generation is whole, as pulled, until its reader lets go.
            #expect(try await dump(tables, in: folder + "/device/" + pulledGeneration) == before)
            #expect(names(in: folder + "/device/generations").count == 2)
            close(readers)

            // Nothing new: the same generation, and the one let go is removed.
            let again = try await mirror(["pull", "file://\(folder)/pub", "--output", "device", "--changes-from", serve.base],
                                         in: folder)
            #expect(again.status == 0, "\(again.stderr)")
            #expect(again.stdout.hasPrefix("caught up from \(serve.base): generation \(line.output.2), up to date, "))
            #expect(try current() == caughtGeneration)
            #expect(names(in: folder + "/device/generations") == [String(line.output.2)])

            // The feed compacted past the replica's mark: the published prefix, pulled whole.
            api.set(third)
            try await walk()
            try await publish()
            try await snapshot("fresh2")
            let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: folder + "/fresh2/manifest.json"))) as? [String: Any]
            let database = try #require((manifest?["databases"] as? [[String: Any]])?.first { $0["path"] as? String == "t_event.sqlite" })
            let through = try #require(database["changes_through"] as? Int)
            try await snapshot("compacted", ["--table", "t_event", "--compact-changes-before", String(through + 1)])
            let fellBack = try await mirror(["pull", "file://\(folder)/pub", "--output", "device", "--changes-from", serve.base],
                                            in: folder)
            #expect(fellBack.status == 0, "\(fellBack.stderr)")
            #expect(fellBack.stderr == "warning: the change feed of 't_event' was compacted through seq \(through): the changes since "
                + "\(through - 1) are gone; take a new snapshot: pulling file://\(folder)/pub whole\n")
            #expect(fellBack.stdout.hasPrefix("pulled file://\(folder)/pub: generation "))
            for table in tables {
                #expect(try await dump(folder + "/device/current/" + table) == dump(folder + "/fresh2/" + table), "\(table)")
            }

            // The database made again: another feed, the published prefix pulled whole.
            await serve.stop()
            running = []
            try FileManager.default.removeItem(atPath: folder + "/out/t_comment.sqlite")
            api.set(second)
            try await walk()
            try await publish()
            try await snapshot("fresh3")
            serve = try await Serve.start("out", in: folder)
            running = [serve.child.pid]
            let otherFeed = try await mirror(["pull", "file://\(folder)/pub", "--output", "device", "--changes-from", serve.base],
                                             in: folder)
            #expect(otherFeed.status == 0, "\(otherFeed.stderr)")
            #expect(otherFeed.stderr.hasPrefix("warning: the change feed of 't_comment' is feed "))
            #expect(otherFeed.stderr.hasSuffix(", not the one that mark came from: the database was made again since; take a new "
                + "snapshot: pulling file://\(folder)/pub whole\n"))
            for table in tables {
                #expect(try await dump(folder + "/device/current/" + table) == dump(folder + "/fresh3/" + table), "\(table)")
            }
            await serve.stop()
            running = []
        }
    }

    @Test("serve --device-tokens: without --device-token-file the feed answers 401, exit 1; with it the replica catches up; the token is never printed")
    func deviceToken() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let api = EventsAPI(first)
        try await FixtureServer.with(api.handler) { server in
            try feedJobs.replacingOccurrences(of: "BASE", with: server.base)
                .write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            #expect(try await mirror(["run", "jobs.yaml", "--quiet", "--output", "out"], in: folder).status == 0)
            #expect(try await mirror(["publish", "file://\(folder)/pub", "--output", "out"], in: folder).status == 0)
            #expect(try await mirror(["pull", "file://\(folder)/pub", "--output", "device"], in: folder).status == 0)
            api.set(second)
            #expect(try await mirror(["run", "jobs.yaml", "--quiet", "--output", "out"], in: folder).status == 0)
            let added = try await mirror(["device-token", "add", "kiosk", "--account", "*", "--table", "*",
                                          "--device-tokens", "devices.jsonl"], in: folder, killAfter: .seconds(20))
            #expect(added.status == 0, "\(added.stderr)")
            try added.stdout.write(toFile: folder + "/token", atomically: true, encoding: .utf8)
            let token = added.stdout.trimmingCharacters(in: .newlines)

            let serve = try await Serve.start("out", in: folder, ["--device-tokens", "devices.jsonl"])
            var running = [serve.child.pid]
            defer { for pid in running { kill(pid, SIGKILL) } }
            let refused = try await mirror(["pull", "file://\(folder)/pub", "--output", "device", "--changes-from", serve.base],
                                           in: folder)
            #expect(refused.status == 1)
            #expect(refused.stderr == "error: GET \(serve.base)/_mirror/changes/t_comment?…: HTTP 401: a device token is needed: "
                + "send it as Authorization: Bearer TOKEN\n")
            #expect(refused.stdout == "")

            let absent = try await mirror(["pull", "file://\(folder)/pub", "--output", "device", "--changes-from", serve.base,
                                           "--device-token-file", "nowhere"], in: folder)
            #expect(absent.status == 2)
            #expect(absent.stderr == "error: cannot read the device token file nowhere: no such file or directory\n")

            let caught = try await mirror(["pull", "file://\(folder)/pub", "--output", "device", "--changes-from", serve.base,
                                           "--device-token-file", "token"], in: folder)
            #expect(caught.status == 0, "\(caught.stderr)")
            #expect(caught.stdout.hasPrefix("caught up from \(serve.base): generation "))
            #expect(caught.stdout.contains(", 5 changes applied, "))
            for said in [refused, absent, caught] { #expect(!said.stdout.contains(token) && !said.stderr.contains(token)) }
            await serve.stop()
            running = []
        }
    }

    @Test("kill -9 during a catch-up, 10 times at random moments: the replica holds a whole generation, and the next catch-up ends where an uninterrupted one does")
    func killed() async throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let api = EventsAPI(first)
        try await FixtureServer.with(api.handler) { server in
            try feedJobs.replacingOccurrences(of: "BASE", with: server.base)
                .write(toFile: folder + "/jobs.yaml", atomically: true, encoding: .utf8)
            #expect(try await mirror(["run", "jobs.yaml", "--quiet", "--output", "out"], in: folder).status == 0)
            #expect(try await mirror(["publish", "file://\(folder)/pub", "--output", "out"], in: folder).status == 0)
            #expect(try await mirror(["pull", "file://\(folder)/pub", "--output", "pulled"], in: folder).status == 0)
            let old = try FileManager.default.destinationOfSymbolicLink(atPath: folder + "/pulled/current")
            api.set(second)
            #expect(try await mirror(["run", "jobs.yaml", "--quiet", "--output", "out"], in: folder).status == 0)
            let serve = try await Serve.start("out", in: folder)
            var running = [serve.child.pid]
            defer { for pid in running { kill(pid, SIGKILL) } }
            try FileManager.default.copyItem(atPath: folder + "/pulled", toPath: folder + "/reference")
            let reference = try await mirror(["pull", "file://\(folder)/pub", "--output", "reference", "--changes-from", serve.base],
                                             in: folder)
            #expect(reference.status == 0, "\(reference.stderr)")
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: folder + "/reference/current") != old)
            for round in 0..<10 {
                try? FileManager.default.removeItem(atPath: folder + "/device")
                try FileManager.default.copyItem(atPath: folder + "/pulled", toPath: folder + "/device")
                let victim = try Child(mirrorBinary.path, ["pull", "file://\(folder)/pub", "--output", "device", "--changes-from", serve.base],
                                       in: folder, environment: [:])
                try await Task.sleep(for: .microseconds(Int.random(in: 0..<40_000)))
                kill(victim.pid, SIGKILL)
                _ = await victim.ending()
                // The pulled generation, or a caught-up one (whose id varies: the rows it adds have
                // the device's own first_seen), whole either way.
                #expect(FileManager.default.fileExists(atPath: folder + "/device/current/.replica.json"), "round \(round)")
                #expect(try problems(replica: folder + "/device") == [], "round \(round)")
                let finished = try await mirror(["pull", "file://\(folder)/pub", "--output", "device", "--changes-from", serve.base],
                                                in: folder)
                #expect(finished.status == 0, "\(finished.stderr)")
                let current = try FileManager.default.destinationOfSymbolicLink(atPath: folder + "/device/current")
                #expect(current != old, "round \(round)")
                #expect(names(in: folder + "/device/generations") == [String(current.dropFirst("generations/".count))], "round \(round)")
                #expect(names(in: folder + "/device/partial") == [], "round \(round)")
                for table in ["t_comment.sqlite", "t_event.sqlite"] {
                    #expect(try await dump(folder + "/device/current/" + table) == dump(folder + "/reference/current/" + table), "round \(round)")
                }
            }
            await serve.stop()
            running = []
        }
    }
}
