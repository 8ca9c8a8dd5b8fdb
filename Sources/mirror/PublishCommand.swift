/// `mirror publish s3://bucket/prefix` (or `file:///folder`): uploads a snapshot of the
/// output folder as a new generation and names it in the top-level manifest.json.
import ArgumentParser
import Foundation
import MirrorExport
import MirrorJobFile
import MirrorModel
import MirrorRemote

struct PublishCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Publish a snapshot of the output folder to S3 or a folder as a new generation for devices.",
        discussion: """
            Uploads a snapshot (as mirror snapshot --with-pages writes it: the stored pages \
            too, unless --without-pages) under \
            PREFIX/generations/G/shard-I/, its manifest.json last, then names generation G \
            for shard I in PREFIX/manifest.json with a conditional write (read again and \
            retried when another publish changed it in between), so a device that reads that \
            manifest finds whole generations only. Then removes the shard's generations \
            beyond the newest --keep, never one the manifest names. The bucket and endpoint \
            settings come from AWS's environment variables (AWS_ACCESS_KEY_ID, \
            AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL_S3).

            To a folder, file:///srv/pub/events, the same layout: each object written to a \
            temporary name, flushed and renamed into place; manifest.json replaced the same \
            way, its check and rename under an exclusive lock on the folder's .lock, so shards \
            publishing at once keep each other's entries; --keep removes old generations the \
            same way.

            With --shard I/N (or --shards N and JOB_COMPLETION_INDEX=I), the output folder is \
            shard I's part; without, it is shard 0 of 1. A manifest of another shard count is \
            replaced by one of N.

            A shard of several whose output folder holds no database (a shard with no jobs: \
            mirror plan lists them) publishes nothing, says so and exits 0.

            Exit status: 0 published; 1 the snapshot could not be made, an object could not be \
            uploaded, the manifest could not be written, or old generations could not be \
            removed (the message names the bucket, key and status); 2 usage error or S3 \
            settings missing or wrong; 130, 143 or 129 stopped by SIGINT, SIGTERM or SIGHUP \
            (before the manifest is written: nothing is named).

            docs/devices.md, section "Publishing generations to S3", describes the layout and the \
            top-level manifest.
            """)

    @Argument(help: ArgumentHelp("Where to publish: s3://bucket/prefix, or a folder, file:///srv/pub/events.",
                                        valueName: "location")) var location: String
    @Option(help: "Output folder holding the databases (default ./cache).") var output: String?
    @Option(help: ArgumentHelp("Publish as shard I of N (0 to N-1).", valueName: "I/N")) var shard: String?
    @Option(help: ArgumentHelp("Publish as one shard of N: the one the environment variable JOB_COMPLETION_INDEX names.",
                               valueName: "N"))
    var shards: Int?
    @Option(help: "Complete generations of the shard to keep, the new one included (at least 1).") var keep = 3
    @Option(help: "A record table to include (repeatable); all when none is named.") var table: [String] = []
    @Option(help: "Only this account's records, and only the files they name.") var account: String?
    @Flag(name: .customLong("with-files"), help: "Include the downloaded files the records name.") var withFiles = false
    @Flag(name: .customLong("without-pages"),
          help: "Leave out the stored pages (the API's URLs, which mirror serve answers from a generation).")
    var withoutPages = false
    @OptionGroup var log: LogOptions

    func validate() throws {
        try ShardChoice.validate(shard: shard, shards: shards)
        if keep < 1 { throw ValidationError("--keep must be at least 1, not \(keep)") }
    }

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        // Checked by `validate()`; the index of `--shards N` comes from the environment.
        let part = try ShardChoice.shard(shard, shards: shards) ?? ShardPlan.Shard.whole
        var folder: String?
        var configuration: S3Configuration?
        if location.hasPrefix("file://") {
            var path = String(location.dropFirst("file://".count))
            while path.count > 1, path.hasSuffix("/") { path.removeLast() }
            guard path.hasPrefix("/"), path.count > 1 else {
                printError("error: '\(location)' names no folder: name one by its absolute path, such as file:///srv/pub/events")
                throw ExitCode(2)
            }
            folder = path
        } else {
            do throws(S3ConfigurationError) {
                configuration = try S3Configuration(url: location, environment: environment)
            } catch {
                for problem in error.problems { printError("error: \(problem)") }
                throw ExitCode(2)
            }
        }
        let logger = LogSetup.bootstrap(quiet: false, verbose: false, format: log.format)
        var options = Publisher.Options(output: output ?? "cache", shard: part, mirrorVersion: Mirror.configuration.version)
        options.keep = keep
        options.tables = table
        options.account = account
        options.withFiles = withFiles
        options.withPages = !withoutPages
        let publisher = if let configuration {
            Publisher(options: options, client: S3Client(configuration, logger: logger), logger: logger)
        } else {
            Publisher(options: options, folder: folder ?? "", logger: logger)
        }
        if let nothing = publisher.nothingToPublish {
            try printOut(nothing)
            return
        }
        let started = Date()
        let (result, stop) = try await GracefulStop.run(.process) {
            do {
                return Result<Publisher.Published, any Error>.success(try await publisher.publish())
            } catch {
                return .failure(error)
            }
        }
        // A generation named when the signal came is published: that is success.
        let published: Publisher.Published
        do {
            published = try result.get()
        } catch {
            if let signal = stop?.signal { throw Interrupted(signal: signal) }
            printError("error: \(error)")
            throw ExitCode(1)
        }
        for warning in published.warnings { printError("warning: \(warning)") }
        func count(_ number: Int, _ noun: String) -> String { "\(number) \(noun)\(number == 1 ? "" : "s")" }
        try printOut("published \(published.location) shard \(part): generation \(published.generation), "
            + "\(count(published.objects, "object")), \(count(published.bytes, "byte")) uploaded, "
            + "\(count(published.removed.count, "old generation")) removed, "
            + String(format: "%.2fs", Date().timeIntervalSince(started)))
    }
}
