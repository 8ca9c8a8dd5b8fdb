import ArgumentParser
import Foundation
import MirrorCore

extension Exporter.Format: ExpressibleByArgument {}
extension RecordSelection.Order: ExpressibleByArgument {}

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Print stored records (NDJSON by default).",
        discussion: """
            Exit status: 0 exported; 1 the table or database could not be found or read, or \
            the file could not be written; 2 usage error.

            README.md, section "Use", describes each format and option.
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
    @Option(help: "walk (the API's order) or id (descending).") var order: RecordSelection.Order = .walk
    @Flag(name: .customLong("local-files"),
          help: "Rewrite the URLs of downloaded files to their paths, relative to the database's folder.")
    var localFiles = false
    @Option(name: .customShort("o"), help: "Write to this file (replaced when complete) instead of stdout.") var file: String?

    func validate() throws {
        if output != nil && db != nil { throw ValidationError("--output and --db cannot be used together") }
        if let limit, limit < 0 { throw ValidationError("--limit must not be negative") }
        if let offset, offset < 0 { throw ValidationError("--offset must not be negative") }
    }

    func run() throws {
        var options = Exporter.Options(table: table)
        options.format = format
        options.selection.account = account
        options.selection.sinceID = sinceID
        options.selection.maxID = maxID
        options.selection.limit = limit
        options.selection.offset = offset
        options.selection.order = order
        options.localFiles = localFiles
        do {
            let database = try db ?? RecordReader.locate(table: table, in: output ?? "cache")
            if let db, !FileManager.default.fileExists(atPath: db) {
                throw RecordReader.Failure(description: "no database file '\(db)'")
            }
            let exporter = Exporter(database: database, options: options)
            if let file {
                try WholeFile.write(to: file) { descriptor in
                    var sink = OutputSink(descriptor: descriptor)
                    try exporter.export(to: &sink)
                }
            } else {
                var sink = OutputSink(descriptor: STDOUT_FILENO)
                try exporter.export(to: &sink)
            }
        } catch {
            printError("error: \(error)")
            throw ExitCode(1)
        }
    }
}
