import ArgumentParser
import MirrorCore
import MirrorJobFile
import MirrorModel

struct PlanCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Print which jobs each of N shards runs (mirror run --shard I/N).",
        discussion: """
            Jobs that must run on one machine go together, as a group: a child job with its \
            parents (parent), and the jobs of one database file in one output folder \
            (database, share_table), taken transitively. A group goes to the shard a job of \
            it is pinned to (shard:), else to FNV-1a (64-bit) of its key modulo N; its key is \
            the smallest, byte by byte, of its jobs' '<job file name>/<job name>'. Prints one \
            line per shard, empty ones too (--json: {"shards": N, "assignments": [{"shard": I, \
            "groups": [{"key": ..., "jobs": [...], "pinned": false}]}]}). A shard with no jobs \
            (more shards than groups, or none hashed there) is warned of on stderr: its run \
            and its publish do nothing and exit 0.

            Exit status: 0 printed; 2 usage or config error (a shard: of N or more, two jobs of \
            one group pinned to different shards).

            \(jobFileReference)
            """)

    @Argument(help: "Job files.") var files: [String]
    @Option(help: ArgumentHelp("The number of shards: the completions of a Kubernetes Indexed Job (1-\(JobLimits.shards.upperBound)).",
                               valueName: "N"))
    var shards: Int
    @Option(help: "Output folder, as given to run --output: jobs of one database file in one folder go together.")
    var output: String?
    @Flag(help: "Print the plan as JSON.") var json = false

    func validate() throws {
        if !JobLimits.shards.contains(shards) {
            throw ValidationError("--shards must be between 1 and \(JobLimits.shards.upperBound), not \(shards)")
        }
    }

    func run() throws {
        var options = Runner.Options()
        options.output = output
        let plan = try ShardPlan(try loadJobFiles(files), shards: shards) { Runner.outputFolder(for: $0, options: options) }
        if let warning = plan.warning { printError("warning: \(warning)") }
        try printOut(json ? plan.json : plan.text)
    }
}
