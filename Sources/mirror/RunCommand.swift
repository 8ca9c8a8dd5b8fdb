import ArgumentParser
import Foundation
import MirrorCore
import MirrorExport
import MirrorHTTP
import MirrorJobFile
import MirrorModel

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the jobs of job files.",
        discussion: """
            Prints one summary line per job on stdout (with --quiet, only for the jobs that \
            failed); logs and progress go to stderr.

            A job whose API asks for a longer wait than its max_wait (its quota spent, a long \
            Retry-After) is deferred: it keeps what it stored, and the first run after the \
            time it may resume resumes there (a run before then does not walk it).

            With --shard I/N (or --shards N and JOB_COMPLETION_INDEX=I, as in each pod of a \
            Kubernetes Indexed Job), only the jobs of shard I run: those mirror plan --shards N \
            lists there. A shard with no jobs runs nothing and exits 0.

            With --state s3://bucket/prefix (or file:///dir), the shard keeps its state in \
            that store, so a worker with an empty output folder resumes where the last one \
            stopped: the shard's lease is taken first, its databases are pulled when the \
            store's copies are newer, and consistent copies are pushed at the end (after a \
            signal too), every --push-every, with the downloaded files they index. docs/deploying.md, \
            section "Running on many machines", describes it.

            Exit status: 0 every job succeeded; 1 at least one job failed (the others still \
            ran), or the state could not be pulled or pushed; 2 usage or config error (nothing fetched); 3 another mirror run holds the \
            output folder's lock (1 when the lock file is a symbolic link, never followed, or \
            cannot be opened), or another worker holds or took the shard's lease (--state); 75 no job failed and at least one was deferred (EX_TEMPFAIL); \
            130, 143 or 129: stopped by SIGINT, SIGTERM or SIGHUP (what was stored stays, the \
            run is recorded as interrupted, the next run resumes).

            \(jobFileReference)
            """)

    @OptionGroup var walk: WalkOptions
    @OptionGroup var log: LogOptions
    @Flag(help: "Start every walk at its first page and fetch every page whole (no refresh_after, no conditional requests).") var refresh = false
    @Option(help: "Run at most this many jobs at once (1-\(Self.parallelLimit)).") var parallel = 4
    @Option(help: "Write the run as JSON to this file.") var report: String?
    @Option(name: .customLong("max-time"),
            help: "Stop the run after this long (30m, 2h), as a signal would: it resumes next time.")
    var maxTime: String?
    @Option(name: .customLong("stop-grace"),
            help: "Once the jobs end or a signal stops them, wait this long at most for a token refresh already sent, so that the refresh token it rotates to is stored.")
    var stopGrace = "10s"
    @Option(help: "Output folder (default: the job file's 'output:', else ./cache).") var output: String?
    @Flag(help: "Print only what failed: no summary line for a job that succeeded or was deferred, errors only in the log, no progress lines.") var quiet = false
    @Option(help: ArgumentHelp("Run only shard I of N (0 to N-1): the jobs mirror plan --shards N lists there.", valueName: "I/N"))
    var shard: String?
    @Option(help: ArgumentHelp("Run only one shard of N: the one the environment variable JOB_COMPLETION_INDEX names, "
                                   + "as a Kubernetes Indexed Job sets it in each pod.", valueName: "N"))
    var shards: Int?
    @Option(help: ArgumentHelp("Keep the shard's state in this store: s3://bucket/prefix (AWS_* variables) or file:///dir.",
                               valueName: "url"))
    var state: String?
    @Option(name: .customLong("push-every"),
            help: "With --state, also push the state this often while the jobs run (5m, 1h); else only at the end.")
    var pushEvery: String?
    @Option(name: .customLong("lease-time"),
            help: "With --state, how long the shard's lease lasts unless renewed (a third of it apart): 60s by default.")
    var leaseTime: String?
    @Option(name: .customLong("metrics-file"),
            help: ArgumentHelp("When the run ends, write its metrics in Prometheus' text format to this file (replaced whole).",
                               valueName: "path"))
    var metricsFile: String?
    @Option(name: .customLong("otlp-endpoint"),
            help: ArgumentHelp("Send the run's spans and metrics over OTLP/HTTP to this collector "
                                   + "(else OTEL_EXPORTER_OTLP_ENDPOINT, if set).", valueName: "url"))
    var otlpEndpoint: String?

    /// `--max-time`: at most a year.
    static func limit(_ text: String) -> Duration? {
        guard let seconds = JobFileLoader.duration(text), seconds > 0, seconds <= 366 * 86_400 else { return nil }
        return .milliseconds(Int64(seconds * 1000))
    }

    /// `state s3://b/p shard 0/1: pulled 1 database and 0 files (12288 bytes), pushed 1 database and 2 files (14336 bytes), generation 3`.
    static func line(_ state: StateSummary) -> String {
        func count(_ number: Int, _ noun: String) -> String { "\(number) \(noun)\(number == 1 ? "" : "s")" }
        var line = "state \(state.location) shard \(state.shard): pulled \(count(state.pulledDatabases, "database")) and "
            + "\(count(state.pulledFiles, "file")) (\(state.pulledBytes) bytes), pushed \(count(state.pushedDatabases, "database")) and "
            + "\(count(state.pushedFiles, "file")) (\(state.pushedBytes) bytes)"
        if let generation = state.generation { line += ", generation \(generation)" }
        return line
    }

    /// Each job running holds its database and connections open: this bounds what a run holds.
    static let parallelLimit = 256

    func validate() throws {
        if let maxTime, Self.limit(maxTime) == nil {
            throw ValidationError("--max-time must be a duration such as 30m or 2h, not '\(maxTime)'")
        }
        if Self.limit(stopGrace) == nil {
            throw ValidationError("--stop-grace must be a duration such as 10s or 1m, not '\(stopGrace)'")
        }
        if !(1...Self.parallelLimit).contains(parallel) {
            throw ValidationError("--parallel must be between 1 and \(Self.parallelLimit), not \(parallel)")
        }
        try ShardChoice.validate(shard: shard, shards: shards)
        if state == nil, pushEvery != nil || leaseTime != nil {
            throw ValidationError("--push-every and --lease-time go with --state")
        }
        if let pushEvery, Self.limit(pushEvery) == nil {
            throw ValidationError("--push-every must be a duration such as 5m or 1h, not '\(pushEvery)'")
        }
        if let leaseTime, (Self.limit(leaseTime) ?? .zero) < RemoteStateOptions.shortestLease {
            throw ValidationError("--lease-time must be a duration of at least 3s, such as 60s or 5m, not '\(leaseTime)'")
        }
        if let metricsFile, let problem = MetricsFile.problem(metricsFile) {
            throw ValidationError(problem)
        }
        if let otlpEndpoint, let problem = OTLPExport.problem(otlpEndpoint) {
            throw ValidationError(problem)
        }
    }

    func run() async throws {
        // Checked by `validate()`; the index of `--shards N` comes from the environment.
        let shard = try ShardChoice.shard(shard, shards: shards)
        let loaded = try loadJobFiles(walk.files)
        let display = !quiet && log.format == .text && TerminalProgress.stderrIsTerminal ? TerminalProgress() : nil
        let logger = LogSetup.bootstrap(quiet: quiet, verbose: walk.verbose, format: log.format, display: display)
        var options = Runner.Options()
        options.jobs = walk.jobs
        options.maxPages = walk.maxPages
        options.refresh = refresh
        options.parallel = parallel
        options.output = output
        options.maxTime = maxTime.flatMap(Self.limit)
        options.stopGrace = Self.limit(stopGrace) ?? options.stopGrace
        options.signals = .process
        options.shard = shard
        if let state {
            var remote = try RemoteStateOptions(location: state, environment: ProcessInfo.processInfo.environment,
                                                logger: logger)
            remote.pushEvery = pushEvery.flatMap(Self.limit)
            if let leaseTime { remote.leaseTime = Self.limit(leaseTime)! }
            options.state = remote
        }
        if let shard, try Runner.select(loaded, options: options).isEmpty {
            if !quiet { try printOut("shard \(shard) has no jobs: nothing to run") }
            return
        }
        let startedAt = Timestamp.string(Date())
        var progress: ProgressHandler?
        if let display {
            progress = { display.update($0) }
        }
        let metrics = metricsFile.map { MetricsFile(path: $0) }
        let export = try OTLPExport.endpoint(flag: otlpEndpoint, environment: ProcessInfo.processInfo.environment)
            .map { endpoint in
                do {
                    return try OTLPExport(endpoint: endpoint, logger: logger)
                } catch {
                    throw UsageError("cannot send to the OTLP endpoint '\(endpoint)': \(error)")
                }
            }
        MetricsFile.bootstrap([metrics?.factory, export?.metrics].compactMap { $0 })
        export?.bootstrapTracing()
        let runner = Runner(client: HTTPClient(), logger: logger, progress: progress)
        let ran: Result<RunSummary, any Error>
        do {
            if let export {
                ran = .success(try await export.running { try await runner.run(loaded, options: options) })
            } else {
                ran = .success(try await runner.run(loaded, options: options))
            }
        } catch {
            ran = .failure(error)
        }
        // Written however the run ended, before anything else is said of it.
        if let metrics {
            do {
                try metrics.write()
            } catch {
                printError("error: cannot write the metrics file '\(metrics.path)': \(error)")
            }
        }
        let summary = try ran.get()
        display?.finish()
        // The report first: it is written even when stdout cannot be.
        if let report {
            do {
                try RunReport(summary: summary, exitStatus: ExitStatus.of(summary), startedAt: startedAt,
                              finishedAt: Timestamp.string(Date())).write(to: report)
            } catch {
                printError("error: cannot write the report '\(report)': \(error)")
                throw ExitCode(1)
            }
        }
        // Quiet (cron) prints only the jobs that failed, so a run that worked prints nothing: a
        // deferred job is a pause (exit 75), and `status --check` says when it stays one too long.
        let shown = quiet ? summary.jobs.filter { !$0.succeeded && $0.status != .deferred } : summary.jobs
        let text = shown.flatMap(\.summaryLines).joined(separator: "\n")
        if !text.isEmpty { try printOut(text) }
        if let state = summary.state {
            if !quiet { try printOut(Self.line(state)) }
            if state.leaseLost {
                printError("error: another worker took the lease of shard \(state.shard) in \(state.location): "
                    + "this run stopped and pushed nothing more")
            } else if let failure = state.failure {
                printError("error: cannot push the state of shard \(state.shard) to \(state.location) "
                    + "(the output folder keeps it; the next run pushes it): \(failure)")
            }
        }
        if let signal = summary.signal { throw Interrupted(signal: signal) }
        if summary.timedOut {
            printError("error: --max-time \(maxTime ?? "") reached: the run stopped; the next run resumes where it did")
            throw ExitCode(1)
        }
        let status = ExitStatus.of(summary)
        if status != 0 { throw ExitCode(status) }
    }
}
