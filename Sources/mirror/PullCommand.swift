import ArgumentParser
import Foundation
import MirrorExport
import MirrorFiles
import MirrorRemote
import MirrorReplica

struct PullCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pull",
        abstract: "Bring a replica on this machine to what a published prefix or a snapshot names.",
        discussion: """
            SOURCE is the folder or URL holding manifest.json: a prefix `mirror publish` writes \
            to (https://cdn.example.com/events/, file:///srv/pub/events) or a folder `mirror \
            snapshot` wrote. Only the objects whose SHA-256 DIR does not hold are fetched, each \
            checked (size and SHA-256) before it is used; the new generation replaces the old \
            in one rename (DIR/current), and a transfer cut short resumes with Range. An \
            unchanged manifest costs one request (a 304).

            With --changes-from SERVE_URL (mirror serve's address), the replica is caught up \
            through serve's change feed instead: each table's changes since the replica's mark \
            are applied to a copy of its database, in a new generation (none when nothing \
            changed); its page URLs answer the pages of the last full pull. When the feed no \
            longer holds the mark (compacted, or the database made again), SOURCE is pulled \
            whole, with a warning. --device-token-file names a file holding the token serve's \
            --device-tokens gave the device, sent as Authorization: Bearer.

            Exit status: 0 pulled, caught up, or already up to date; 1 the source or the \
            change feed could not be read, or an object was refused (the replica keeps the \
            generation it had); 2 usage error, or a device token file that cannot be read; 3 \
            another pull of DIR is under way; 130, 143 or 129 stopped by SIGINT, SIGTERM or \
            SIGHUP (what was fetched is kept for the next pull).

            docs/devices.md describes the replica's folder.
            """)

    @Argument(help: ArgumentHelp("Where manifest.json is: an http(s):// or file:// URL, or a folder.", valueName: "source"))
    var source: String
    @Option(help: "The replica's folder (default ./replica).") var output: String?
    @Option(name: .customLong("changes-from"), help: ArgumentHelp(
        "Catch the replica up through the change feed of mirror serve at this http(s):// address; SOURCE is pulled whole only when the feed cannot serve it.",
        valueName: "serve-url"))
    var changesFrom: String?
    @Option(name: .customLong("device-token-file"), help: ArgumentHelp(
        "A file holding the device's token for serve --device-tokens (with --changes-from).", valueName: "file"))
    var deviceTokenFile: String?

    func validate() throws {
        if source.isEmpty { throw ValidationError("SOURCE must not be empty") }
        if let scheme = Self.url(source).scheme?.lowercased(), !["http", "https", "file"].contains(scheme) {
            throw ValidationError("SOURCE must be an http://, https:// or file:// URL, or a folder")
        }
        if let changesFrom, !["http", "https"].contains(URL(string: changesFrom)?.scheme?.lowercased() ?? "") {
            throw ValidationError("--changes-from must be mirror serve's http:// or https:// address, not '\(changesFrom)'")
        }
        if deviceTokenFile != nil, changesFrom == nil {
            throw ValidationError("--device-token-file goes with --changes-from")
        }
    }

    /// `text` as a URL: one with a scheme as it is, anything else a folder.
    static func url(_ text: String) -> URL {
        if text.contains("://"), let url = URL(string: text) { return url }
        return URL(fileURLWithPath: text)
    }

    func run() async throws {
        let folder = output ?? "replica"
        let started = Date()
        if let changesFrom { return try await catchUp(URL(string: changesFrom)!, folder: folder, started: started) }
        let url = Self.url(source)
        let outcome = try await replicaDoing(in: folder) { try await $0.sync(from: url) }
        let seconds = String(format: "%.2fs", Date().timeIntervalSince(started))
        guard outcome.changed else {
            try printOut("pulled \(source): generation \(outcome.generation), up to date, \(seconds)")
            return
        }
        func count(_ number: Int, _ noun: String) -> String { "\(number) \(noun)\(number == 1 ? "" : "s")" }
        try printOut("pulled \(source): generation \(outcome.generation), \(count(outcome.fetchedObjects, "object")) fetched "
            + "(\(outcome.fetchedBytes) bytes), \(outcome.keptObjects) kept, \(seconds)")
    }

    /// What `work` does with the replica in `folder`, stopped by a signal as every command is;
    /// a failure said on stderr and turned into the exit status (3 another pull under way, 1
    /// any other).
    private func replicaDoing<Outcome: Sendable>(in folder: String,
                                                 _ work: @escaping @Sendable (Replica) async throws -> Outcome) async throws -> Outcome {
        let (result, stop) = try await GracefulStop.run(.process) {
            do {
                let replica = try Replica(folder: URL(fileURLWithPath: folder), remote: { PullSource(base: $0) })
                return Result<Outcome, any Error>.success(try await work(replica))
            } catch {
                return .failure(error)
            }
        }
        do {
            return try result.get()
        } catch ReplicaError.busy(let folder) {
            printError("error: \(ReplicaError.busy(folder))")
            throw ExitCode(3)
        } catch {
            if let signal = stop?.signal { throw Interrupted(signal: signal) }
            printError("error: \(error)")
            throw ExitCode(1)
        }
    }

    /// `--changes-from`: the replica caught up through serve's change feed, SOURCE pulled
    /// whole when the feed cannot serve its marks.
    private func catchUp(_ serve: URL, folder: String, started: Date) async throws {
        let token = try readToken()
        let url = Self.url(source)
        let outcome = try await replicaDoing(in: folder) { try await $0.catchUp(from: serve, token: token, else: url) }
        let seconds = String(format: "%.2fs", Date().timeIntervalSince(started))
        let shown = ReplicaError.shown(serve)
        if let full = outcome.fullSync {
            printError("warning: \(outcome.fallbackReason ?? "the change feed cannot serve the replica"): pulling \(source) whole")
            try printOut("pulled \(source): generation \(full.generation), "
                + (full.changed ? "\(full.fetchedObjects) object\(full.fetchedObjects == 1 ? "" : "s") fetched (\(full.fetchedBytes) bytes), \(full.keptObjects) kept" : "up to date")
                + ", \(seconds)")
            return
        }
        guard outcome.changed else {
            try printOut("caught up from \(shown): generation \(outcome.generation), up to date, \(seconds)")
            return
        }
        try printOut("caught up from \(shown): generation \(outcome.generation), \(outcome.changes) change\(outcome.changes == 1 ? "" : "s") applied, \(seconds)")
    }

    /// The token of `--device-token-file`, its surrounding blanks left out.
    private func readToken() throws -> String? {
        guard let deviceTokenFile else { return nil }
        let token: String
        do {
            token = try String(contentsOfFile: deviceTokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        } catch {
            printError("error: cannot read the device token file \(deviceTokenFile): \(SystemError.reason(error))")
            throw ExitCode(2)
        }
        if token.isEmpty {
            printError("error: the device token file \(deviceTokenFile) is empty: put the token serve's device-token add printed in it")
            throw ExitCode(2)
        }
        return token
    }
}
