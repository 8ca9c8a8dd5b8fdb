import ArgumentParser
import MirrorCore
import MirrorModel
import MirrorStore

struct InferCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "infer",
        abstract: "Propose a job's columns: and explode: from the records it stored.",
        discussion: """
            Reads the records of the job's table in its output folder (all, or the first N in \
            walk order with --sample N) and prints a columns: block to paste under the job: a \
            column for each leaf path, typed by the values seen, each after a comment saying \
            the JSON types seen, how often the path is present, and whether it looks like a \
            time, an id or holds integers past 64 bits; then, for the lists the records hold, \
            an explode: block.

            Exit status: 0 printed; 1 the output folder, the job's table or its database could \
            not be found or read; 2 usage or config error (a job file with several jobs and no \
            --job, no job of that name).

            docs/on-disk-format.md, section "Inferring columns", gives the rules.
            """)

    @Argument(help: "The job file.") var file: String
    @Option(help: "The job, when the file has more than one.") var job: String?
    @Option(help: ArgumentHelp("Read only the first N records, in walk order.", valueName: "N")) var sample: Int?
    @Option(help: "Output folder holding the databases (default: the job file's 'output:', else ./cache).")
    var output: String?

    func validate() throws {
        if let sample, sample < 1 { throw ValidationError("--sample must be at least 1, not \(sample)") }
    }

    func run() throws {
        let loaded = try loadJobFiles([file])[0]
        let spec = try ColumnInference.job(job, in: loaded)
        var options = Runner.Options()
        options.output = output
        let text: String
        do {
            text = try ColumnInference.infer(job: spec, folder: Runner.outputFolder(for: loaded, options: options), sample: sample)
        } catch {
            printError("error: \(error)")
            throw ExitCode(1)
        }
        try printOut(text)
    }
}
