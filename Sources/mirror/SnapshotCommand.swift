import ArgumentParser
import Foundation
import MirrorExport
import MirrorModel

struct SnapshotCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapshot",
        abstract: "Write a consistent, self-contained copy of the output folder for devices.",
        discussion: """
            DIR gets one SQLite file per database (no -wal or -shm beside it), each one \
            committed state even while `mirror run` writes, with the record tables asked for, \
            the index of their downloaded files (_mirror_files) and _mirror_snapshot; with \
            --with-pages their stored pages (_mirror_pages, secrets masked), so that `mirror \
            serve --output DIR` answers the API's URLs as on the output folder; the files \
            themselves with --with-files; and manifest.json. It is written to DIR.partial \
            and renamed to DIR when whole; an earlier snapshot at DIR is replaced in one step.

            Exit status: 0 written; 1 the output folder could not be read or the snapshot \
            written (nothing is left at DIR.partial), or the snapshot is in place but the \
            change feed could not be compacted (the message says which); 2 usage error; 3 \
            another snapshot is writing to DIR (it holds DIR.lock); 130, 143 or 129 stopped \
            by SIGINT, SIGTERM or SIGHUP.

            docs/devices.md describes the layout, the \
            manifest and the change feed.
            """)

    @Argument(help: ArgumentHelp("Folder to write the snapshot to.", valueName: "dir")) var destination: String
    @Option(help: "Output folder holding the databases (default ./cache).") var output: String?
    @Option(help: "A record table to include (repeatable); all when none is named.") var table: [String] = []
    @Option(help: "Only this account's records, and only the files they name.") var account: String?
    @Flag(name: .customLong("with-files"), help: "Include the downloaded files (hard links where possible, else copies).")
    var withFiles = false
    @Flag(name: .customLong("with-pages"),
          help: "Include the stored pages of the tables (only the account's, with --account), for `mirror serve` to answer the API's URLs.")
    var withPages = false
    @Option(name: .customLong("compact-changes-before"),
            help: ArgumentHelp("Then drop the changes before this sequence number from the database's change feed (one database only).",
                               valueName: "seq"))
    var compactChangesBefore: Int?

    func validate() throws {
        if destination.isEmpty { throw ValidationError("DIR must not be empty") }
        if let compactChangesBefore, compactChangesBefore < 1 {
            throw ValidationError("--compact-changes-before must be at least 1")
        }
    }

    func run() async throws {
        var options = SnapshotWriter.Options(output: output ?? "cache", destination: destination,
                                             mirrorVersion: Mirror.configuration.version)
        options.tables = table
        options.account = account
        options.withFiles = withFiles
        options.withPages = withPages
        options.compactChangesBefore = compactChangesBefore
        let writer = SnapshotWriter(options: options)
        let started = Date()
        let (result, stop) = try await GracefulStop.run(.process) {
            do {
                return Result<SnapshotWriter.Written, any Error>.success(try await writer.write())
            } catch {
                return .failure(error)
            }
        }
        // A snapshot that was finished when the signal came is in place: that is success.
        let written: SnapshotWriter.Written
        do {
            written = try result.get()
        } catch let failure as SnapshotWriter.Failure where failure.busy {
            printError("error: \(failure)")
            throw ExitCode(3)
        } catch {
            if let signal = stop?.signal { throw Interrupted(signal: signal) }
            printError("error: \(error)")
            throw ExitCode(1)
        }
        for warning in written.warnings { printError("warning: \(warning)") }
        let manifest = written.manifest
        let seconds = Date().timeIntervalSince(started)
        for database in manifest.databases {
            let tables = database.tables.map { "\($0.name) \($0.records) records" }.joined(separator: ", ")
            try printOut("\(database.path): \(tables), \(database.bytes) bytes, changes through \(database.changesThrough)")
        }
        func count(_ number: Int, _ noun: String) -> String { "\(number) \(noun)\(number == 1 ? "" : "s")" }
        let files = withFiles ? ", " + count(manifest.files.count, "file") : ""
        try printOut("snapshot \(destination): \(count(manifest.databases.count, "database"))\(files), "
            + String(format: "%.2fs", seconds))
    }
}
