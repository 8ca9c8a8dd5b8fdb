import ArgumentParser
import Foundation
import MirrorCore
import MirrorExport
import MirrorFiles
import MirrorHTTP
import MirrorModel

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Walk the pages of job files without storing anything and report page-walk faults.",
        discussion: """
            A walk cut by --max-pages is a fault: the pages after it were not verified.

            Exit status: 0 no fault; 1 at least one fault; 2 usage or config error; 130, 143 \
            or 129: stopped by SIGINT, SIGTERM or SIGHUP (the walks are reported as far as \
            they went).

            \(jobFileReference)
            """)

    @OptionGroup var walk: WalkOptions
    @OptionGroup var log: LogOptions
    @Option(help: "Walk a child job (parent:) for this many of its parent's first records (default: all).")
    var maxParents: Int?
    @Option(help: "Write JUnit XML to this file: one test case per job.") var junit: String?
    @Flag(help: "Log errors only.") var quiet = false

    func validate() throws {
        if let maxParents, maxParents < 1 { throw ValidationError("--max-parents must be at least 1") }
    }

    func run() async throws {
        let loaded = try loadJobFiles(walk.files)
        let logger = LogSetup.bootstrap(quiet: quiet, verbose: walk.verbose, format: log.format)
        var options = Verifier.Options()
        options.jobs = walk.jobs
        options.maxPages = walk.maxPages
        options.maxParents = maxParents
        options.signals = .process
        let summary = try await Verifier(client: HTTPClient(), logger: logger).verify(loaded, options: options)
        if !summary.text.isEmpty { try printOut(summary.text) }
        if let junit {
            do {
                try WholeFile.write(Data(summary.junitXML.utf8), to: junit)
            } catch {
                printError("error: cannot write '\(junit)': \(error)")
                throw ExitCode(1)
            }
        }
        if let signal = summary.signal { throw Interrupted(signal: signal) }
        if !summary.passed { throw ExitCode(1) }
    }
}
