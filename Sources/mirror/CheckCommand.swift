import ArgumentParser
import MirrorModel

struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate job files without fetching anything.",
        discussion: """
            Every problem of every file is reported at once as FILE:LINE:COLUMN: message.

            Exit status: 0 every file is valid; 2 a config or usage error.

            \(jobFileReference)
            """)

    @Argument(help: "Job files.") var files: [String]

    func run() throws {
        for file in try loadJobFiles(files) {
            try printOut("\(file.path): ok, \(file.jobs.count) \(file.jobs.count == 1 ? "job" : "jobs")")
        }
    }
}
