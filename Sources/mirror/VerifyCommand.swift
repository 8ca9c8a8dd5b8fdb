import ArgumentParser
import Foundation
import MirrorCore

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Walk the pages of job files without storing anything and report page-walk faults.",
        discussion: """
            Exit status: 0 no fault; 1 at least one fault; 2 usage or config error.

            \(jobFileReference)
            """)

    @Argument(help: "Job files.") var files: [String]
    @Option(name: .customLong("job"), help: "Verify only this job (repeatable).") var jobs: [String] = []
    @Option(help: "Stop each walk after this many pages (a cut walk is a fault).") var maxPages: Int?
    @Option(help: "Write JUnit XML to this file: one test case per job.") var junit: String?
    @Flag(help: "Log errors only.") var quiet = false
    @Flag(help: "Log every page.") var verbose = false

    func validate() throws {
        if let maxPages, maxPages < 1 { throw ValidationError("--max-pages must be at least 1") }
    }

    func run() async throws {
        let loaded = try loadJobFiles(files)
        let logger = LogSetup.bootstrap(quiet: quiet, verbose: verbose)
        var options = Verifier.Options()
        options.jobs = jobs
        options.maxPages = maxPages
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
        if !summary.passed { throw ExitCode(1) }
    }
}
