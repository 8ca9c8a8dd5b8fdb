import ArgumentParser
import Foundation
import MirrorExport
import MirrorFiles
import MirrorModel
import MirrorStore

extension Exporter.Format: ExpressibleByArgument {}
extension RecordSelection.Order: ExpressibleByArgument {}

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Print stored records (NDJSON by default).",
        discussion: """
            Exit status: 0 exported; 1 the table or database could not be found or read, or \
            the file could not be written; 2 usage error; 4 the change feed no longer holds \
            the changes since --changes-since (take a new snapshot).

            --changes-since N prints the table's changes after sequence N, one per changed \
            record, and the mark to ask from next: on stderr (`changes_through M (… feed F)`), \
            or as the last members of --format json's object. Give --feed F to have a mark of \
            another feed (a database made again since) refused.

            docs/commands.md describes each format and option.
            """)

    @Option(help: "Table to export.") var table: String
    @Option(help: "Output folder holding the databases (default ./cache).") var output: String?
    @Option(help: "Database file to read instead of searching the output folder.") var db: String?
    @Option(help: "ndjson, json or csv.") var format: Exporter.Format = .ndjson
    @Option(help: "Only this account's records.") var account: String?
    // Unconditional: an id may start with a dash (`--max-id -1`).
    @Option(name: .customLong("since-id"), parsing: .unconditional, help: "Only ids greater than this.") var sinceID: String?
    @Option(name: .customLong("max-id"), parsing: .unconditional, help: "Only ids up to and including this.") var maxID: String?
    @Option(help: "At most this many records.") var limit: Int?
    @Option(help: "Skip this many records first.") var offset: Int?
    @Option(help: "walk (the API's order, the default) or id (descending).") var order: RecordSelection.Order?
    @Option(name: .customLong("changes-since"),
            help: ArgumentHelp("Print the changes after this sequence number (0: from the first) instead of the records.",
                               valueName: "seq"))
    var changesSince: Int?
    @Option(help: ArgumentHelp("With --changes-since: the feed the mark came from (a snapshot's or an earlier export's); "
                               + "another feed exits 4.", valueName: "id"))
    var feed: String?
    @Flag(name: .customLong("local-files"),
          help: "Rewrite the URLs of downloaded files to their paths, relative to the database's folder.")
    var localFiles = false
    @Option(name: .customShort("o"), help: "Write to this file (replaced when complete) instead of stdout.") var file: String?

    func validate() throws {
        if output != nil && db != nil { throw ValidationError("--output and --db cannot be used together") }
        if let limit, limit < 0 { throw ValidationError("--limit must not be negative") }
        if let offset, offset < 0 { throw ValidationError("--offset must not be negative") }
        if let changesSince {
            if changesSince < 0 { throw ValidationError("--changes-since must not be negative") }
            if format == .csv { throw ValidationError("--changes-since prints ndjson or json, not csv") }
            let others = [("--since-id", sinceID != nil), ("--max-id", maxID != nil), ("--offset", offset != nil),
                          ("--order", order != nil)].filter(\.1).map(\.0)
            if let other = others.first { throw ValidationError("\(other) cannot be used with --changes-since") }
        } else if feed != nil {
            throw ValidationError("--feed goes with --changes-since")
        }
    }

    func run() throws {
        if let changesSince { return try exportChanges(since: changesSince) }
        var options = Exporter.Options(table: table)
        options.format = format
        options.selection.account = account
        options.selection.sinceID = sinceID
        options.selection.maxID = maxID
        options.selection.limit = limit
        options.selection.offset = offset
        options.selection.order = order ?? .walk
        options.localFiles = localFiles
        try write { sink in try Exporter(database: try database(), options: options).export(to: &sink) }
    }

    /// The table's changes since `since`, and the mark to ask from next.
    private func exportChanges(since: Int) throws {
        var options = ChangeExporter.Options(table: table, since: since)
        options.feed = feed
        options.account = account
        options.limit = limit
        options.format = format
        options.localFiles = localFiles
        var mark: ChangeFeed.Mark?
        try write { sink in mark = try ChangeExporter(database: try database(), options: options).export(to: &sink) }
        if let mark, format == .ndjson {
            printError("changes_through \(mark.through) (\(mark.count) changes since \(mark.since), feed \(mark.feed))")
        }
    }

    /// The database holding the table.
    private func database() throws -> String {
        if let db, !FileManager.default.fileExists(atPath: db) {
            throw RecordReader.Failure(description: "no database file '\(db)'")
        }
        return try db ?? RecordReader.locate(table: table, in: output ?? "cache")
    }

    /// Runs `body` with a sink on `-o FILE` (whole or not at all) or stdout.
    private func write(_ body: (inout OutputSink) throws -> Void) throws {
        do {
            if let file {
                try WholeFile.write(to: file) { descriptor in
                    var sink = OutputSink(descriptor: descriptor)
                    try body(&sink)
                }
            } else {
                var sink = OutputSink(descriptor: STDOUT_FILENO)
                try body(&sink)
            }
        } catch let unreachable as ChangeFeed.Unreachable {
            throw unreachable
        } catch {
            printError("error: \(error)")
            throw ExitCode(1)
        }
    }
}
