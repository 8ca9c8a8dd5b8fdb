import ArgumentParser
import MirrorCore

struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "check", abstract: "Validate job files without fetching anything.")

    @Argument(help: "Job files.") var files: [String]

    func run() throws {
        for file in try JobFileLoader().load(paths: files) {
            printOut("\(file.path): ok, \(file.jobs.count) \(file.jobs.count == 1 ? "job" : "jobs")")
        }
    }
}
