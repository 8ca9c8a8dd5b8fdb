import ArgumentParser
import Foundation
import MirrorExport
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

            Exit status: 0 pulled, or already up to date; 1 the source could not be read or \
            an object was refused (the replica keeps the generation it had); 2 usage error; 3 \
            another pull of DIR is under way; 130, 143 or 129 stopped by SIGINT, SIGTERM or \
            SIGHUP (what was fetched is kept for the next pull).

            docs/devices.md describes the replica's folder.
            """)

    @Argument(help: ArgumentHelp("Where manifest.json is: an http(s):// or file:// URL, or a folder.", valueName: "source"))
    var source: String
    @Option(help: "The replica's folder (default ./replica).") var output: String?

    func validate() throws {
        if source.isEmpty { throw ValidationError("SOURCE must not be empty") }
        if let scheme = Self.url(source).scheme?.lowercased(), !["http", "https", "file"].contains(scheme) {
            throw ValidationError("SOURCE must be an http://, https:// or file:// URL, or a folder")
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
        let (result, stop) = try await GracefulStop.run(.process) {
            do {
                let replica = try Replica(folder: URL(fileURLWithPath: folder), remote: { PullSource(base: $0) })
                return Result<SyncOutcome, any Error>.success(try await replica.sync(from: Self.url(source)))
            } catch {
                return .failure(error)
            }
        }
        let outcome: SyncOutcome
        do {
            outcome = try result.get()
        } catch ReplicaError.busy(let folder) {
            printError("error: \(ReplicaError.busy(folder))")
            throw ExitCode(3)
        } catch {
            if let signal = stop?.signal { throw Interrupted(signal: signal) }
            printError("error: \(error)")
            throw ExitCode(1)
        }
        let seconds = String(format: "%.2fs", Date().timeIntervalSince(started))
        guard outcome.changed else {
            try printOut("pulled \(source): generation \(outcome.generation), up to date, \(seconds)")
            return
        }
        func count(_ number: Int, _ noun: String) -> String { "\(number) \(noun)\(number == 1 ? "" : "s")" }
        try printOut("pulled \(source): generation \(outcome.generation), \(count(outcome.fetchedObjects, "object")) fetched "
            + "(\(outcome.fetchedBytes) bytes), \(outcome.keptObjects) kept, \(seconds)")
    }
}
