import ArgumentParser
import Foundation
import MirrorCore
import MirrorModel
import MirrorStore

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show tables, record counts and each job's last run.",
        discussion: """
            A job is stale when it has had no successful run in the last 24 hours, or never ran. \
            A deferred job (its API asked for a longer wait than its max_wait) shows when it may \
            resume; it is not failed, and --check counts it only once it is stale.

            With --check (for monitoring: Nagios, cron, a health check) the exit status also \
            says whether anything needs attention.

            Exit status: 0 shown (with --check: and no job listed is failed or stale); 1 an \
            output folder could not be read, or with --check a job listed is failed or stale; \
            2 usage or config error.

            \(jobFileReference)
            """)

    @Argument(help: "Job files (optional): show these jobs, in their output folders.") var files: [String] = []
    @Option(help: "Output folder (default: the job files' 'output:', else ./cache).") var output: String?
    @Flag(help: "Print JSON.") var json = false
    @Flag(help: "Exit 1 when any job listed is failed (its last run failed) or stale.") var check = false

    func run() throws {
        let loaded = try loadJobFiles(files)
        var folders: [String: [JobFile]] = [:]
        var order: [String] = []
        if loaded.isEmpty {
            order = [output ?? "cache"]
            folders[order[0]] = []
        }
        for file in loaded {
            var options = Runner.Options()
            options.output = output
            let folder = Runner.outputFolder(for: file, options: options)
            if folders[folder] == nil { order.append(folder) }
            folders[folder, default: []].append(file)
        }
        var reports: [StatusReport] = []
        for folder in order {
            do {
                reports.append(try StatusReader.read(folder: folder, jobFiles: folders[folder] ?? []))
            } catch {
                printError("error: cannot read '\(folder)': \(error)")
                throw ExitCode(1)
            }
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            encoder.keyEncodingStrategy = .convertToSnakeCase
            let data = try encoder.encode(reports)
            try printOut(String(decoding: data, as: UTF8.self))
        } else {
            try printOut(reports.map(\.text).joined(separator: "\n\n"))
        }
        if check, reports.contains(where: { $0.jobs.contains { $0.stale || $0.lastRun?.status == .failed } }) {
            throw ExitCode(1)
        }
    }
}
