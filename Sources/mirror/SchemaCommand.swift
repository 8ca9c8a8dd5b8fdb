import ArgumentParser
import MirrorJobFile
import MirrorModel

struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Print the JSON Schema of the job-file format, for editors.",
        discussion: """
            Save it beside the job files (mirror schema > mirror.schema.json) and start a job \
            file with the line '# yaml-language-server: $schema=./mirror.schema.json': VS Code \
            (with the YAML extension) and other editors then complete keys and flag mistakes.

            Exit status: 0.

            \(jobFileReference)
            """)

    func run() throws {
        try printOut(String(JobFileSchema.text.dropLast()))
    }
}
