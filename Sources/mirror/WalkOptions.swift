import ArgumentParser
import MirrorModel

/// What `run` and `verify` share: the job files, which of their jobs, how far each walk
/// goes, and whether every page is logged.
struct WalkOptions: ParsableArguments {
    @Argument(help: "Job files.") var files: [String]
    @Option(name: .customLong("job"), help: "Only this job (repeatable).") var jobs: [String] = []
    @Option(help: "Stop each walk after this many pages.") var maxPages: Int?
    @Flag(help: "Log every page.") var verbose = false

    func validate() throws {
        if let maxPages, maxPages < 1 { throw ValidationError("--max-pages must be at least 1") }
    }
}
