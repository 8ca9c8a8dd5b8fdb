import ArgumentParser
import Foundation
import MirrorCore
import MirrorHTTP

struct InitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Write a first job file from what an API answers.",
        discussion: """
            Requests URL, finds the array of records, their id and the paging dialect (a next \
            URL in the body, a Link header, a cursor with has_more, page or offset numbers), \
            confirms the paging by walking two pages as `mirror run` would (page 2 must bring \
            new ids), and writes the job file, a comment above each key saying why it was \
            chosen. What was seen and not chosen is said on stderr and atop the file.

            --auth FILE names a YAML file holding an `auth:` block (README's kinds); it is \
            copied into the job with its ${VAR} placeholders, which are expanded from the \
            environment for the requests init makes.

            Exit status: 0 written; 1 the API could not be asked or the file not written; 2 \
            usage or config error, the file exists (without --force), or the answers leave \
            the job undecided (no array of objects, no unique id, page 2 repeating page 1): \
            nothing written.
            """)

    @Argument(help: "The URL of the API's first page.") var url: String
    @Option(help: ArgumentHelp("Where to write the job file (default: jobs/NAME.yaml).", valueName: "FILE")) var out: String?
    @Option(help: ArgumentHelp("A YAML file holding an `auth:` block.", valueName: "FILE")) var auth: String?
    @Option(help: "The job's name (default: the URL's last path segment).") var name: String?
    @Flag(help: "Overwrite an existing job file.") var force = false

    func validate() throws {
        if let name, name.isEmpty || !name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }) {
            throw ValidationError("--name must be letters, digits, '_' or '-', not '\(name)'")
        }
    }

    func run() async throws {
        let logger = LogSetup.bootstrap(quiet: true, verbose: false)
        do {
            let written = try await JobInitializer(client: HTTPClient(), logger: logger)
                .write(url: url, out: out, name: name, authFile: auth, force: force)
            for note in written.proposal.notes { printError(note) }
            try printOut("wrote \(written.path) (job '\(written.proposal.name)', table '\(written.proposal.table)')\n"
                + "next: mirror run \(written.path)")
        } catch let failure as InitFailure {
            printError("error: \(failure)")
            throw ExitCode(failure.status)
        }
    }
}
