import Foundation
package import Logging
import Metrics
import MirrorDownload
package import MirrorExport
import MirrorFiles
package import MirrorHTTP
package import MirrorJobFile
package import MirrorModel
import MirrorRemote
import MirrorStore
import MirrorWalk
import ServiceLifecycle
import Tracing

/// A usage problem found before anything is fetched (exit 2).
package struct UsageError: Error, Sendable, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// Runs the jobs of some job files and records each outcome in its store.
package struct Runner: Sendable {
    package struct Options: Sendable {
        package var jobs: [String] = []
        package var maxPages: Int?
        /// Start every walk at its first page, even one that failed half-way, and fetch
        /// every page whole (no `refresh_after`, no conditional requests).
        package var refresh = false
        /// Jobs run at once.
        package var parallel = 4
        package var output: String?
        /// Backoff between retries.
        package var retry = RetryPolicy()
        /// Response bytes a walk holds for pages ahead of the one it stores next.
        var pagesAhead = PageBudget.defaultLimit
        /// `--max-time`: once this has passed on the client's clock, the run stops as a
        /// signal would stop it.
        package var maxTime: Duration?
        /// `--stop-grace`: once the jobs have ended (or a signal stopped them), how long the run
        /// waits at most for the token refreshes already sent, so that a rotated refresh
        /// token in their answers is stored.
        package var stopGrace: Duration = .seconds(10)
        /// The signals that stop the run (see `GracefulStop`).
        package var signals = StopSignals.none
        /// `--shard I/N`: only the jobs of this shard of the plan (`ShardPlan`).
        package var shard: ShardPlan.Shard?
        /// `--state`: the shard's state kept in a remote store.
        package var state: RemoteStateOptions?
        package init() {}
    }

    let client: HTTPClient
    /// Shared by every job of the run.
    let limiter: RateLimiter
    /// What each host says of its quota, shared by every job of the run; made for each run,
    /// so that no quota wait outlasts its `--max-time`.
    private(set) var quota: QuotaPacer
    let logger: Logger
    let progress: ProgressHandler?

    package init(client: HTTPClient, logger: Logger, progress: ProgressHandler? = nil, limiter: RateLimiter = RateLimiter()) {
        self.client = client
        self.logger = logger
        self.progress = progress
        self.limiter = limiter
        quota = QuotaPacer(clock: client.clock)
    }

    /// The jobs selected by `--job` (and `--shard`), each with its output folder.
    package static func select(_ files: [JobFile], options: Options) throws -> [(job: JobSpec, file: JobFile, output: String)] {
        let indexed = files.enumerated().flatMap { index, file in
            file.jobs.map { (entry: (job: $0, file: file, output: outputFolder(for: file, options: options)), file: index, job: $0.name) }
        }
        var all = indexed.map(\.entry)
        for name in options.jobs where !all.contains(where: { $0.job.name == name }) {
            let hint = closestKey(to: name, in: all.map(\.job.name)).map { " (did you mean '\($0)'?)" } ?? ""
            throw UsageError("no job named '\(name)' in \(files.map(\.path).joined(separator: ", "))\(hint)")
        }
        if let shard = options.shard {
            all = try entries(indexed, of: files, shard: shard, options: options)
        }
        let selected = options.jobs.isEmpty ? all : all.filter { options.jobs.contains($0.job.name) }
        // Each file's jobs were checked against each other when it was read; here, the jobs
        // of different files that write to one output folder.
        var claims: [String: TableClaims] = [:]
        for entry in selected {
            let folder = (entry.output as NSString).standardizingPath
            if let conflict = claims[folder, default: TableClaims()].claim(entry.job) {
                throw UsageError("\(entry.file.path): \(conflict) (both in output folder '\(entry.output)')")
            }
            // The output folder is copied to devices: no refresh token goes there.
            if case let .oauth2(oauth)? = entry.job.auth?.kind, let store = oauth.tokenStore,
               Paths.isInside(store, folder: entry.output) {
                throw UsageError("\(entry.file.path): the token_store of \(entry.job.auth!) ('\(store)') is inside the output "
                    + "folder '\(entry.output)', which is copied to devices")
            }
        }
        return selected
    }

    package static func outputFolder(for file: JobFile, options: Options) -> String {
        options.output ?? file.output ?? "cache"
    }

    /// Runs the selected jobs. Every output folder is locked before the first request;
    /// throws `LockedError` at once if another run holds one. The run is a span (`run`), the
    /// parent of each job's (`RunSpans`).
    package func run(_ files: [JobFile], options: Options) async throws -> RunSummary {
        try await withSpan("run") { span in
            let summary = try await runJobs(files, options: options)
            RunSpans.ended(summary, span: span)
            return summary
        }
    }

    private func runJobs(_ files: [JobFile], options: Options) async throws -> RunSummary {
        let started = client.clock.now
        let deadline = options.maxTime.map { started + $0 }
        var runner = self
        runner.quota = QuotaPacer(clock: client.clock, deadline: deadline)
        if let output = options.output {
            switch OutputObstacle.find(for: output) {
            case nil: break
            case .isFile: throw UsageError("output folder '\(output)' is a file")
            case let .insideFile(file): throw UsageError("output folder '\(output)' cannot be made: '\(file)' is a file")
            }
        }
        let selected = try Self.select(files, options: options)
        if let shard = options.shard {
            Gauge(label: "mirror_shard_info", dimensions: [("shard", "\(shard.index)"), ("shards", "\(shard.count)")]).record(1)
        }
        var locks: [String: OutputLock] = [:]
        for entry in selected where locks[entry.output] == nil {
            locks[entry.output] = try OutputLock(folder: entry.output)
            FileNaming.sweepPartials(in: entry.output)
        }
        defer { withExtendedLifetime(locks) {} }
        let remote = try await beginState(selected, options: options)
        // Up to `parallel` jobs at once; one job's failure never stops another. Once the run
        // is stopped (a signal, `--max-time`, the shard's lease lost), no job starts. Each job
        // opens its database when it starts and lets it go when it ends, so the files a run
        // holds open are bounded by `parallel`, not by the number of jobs. The state is pushed
        // after the jobs, in the work a first signal does not cut.
        let stores = OpenStores()
        let (lost, lostContinuation) = AsyncStream<StopCause>.makeStream()
        let ran: (value: [JobOutcome?], stop: StopCause?)
        do {
            ran = try await GracefulStop.run(options.signals, deadline: deadline, clock: client.clock,
                                             requests: lost) { [runner] in
                await runner.keepingState(remote, options: options, lost: lostContinuation) {
                    // A child job starts once its parent, if it runs too, has ended.
                    await JobScheduler.map(selected, width: options.parallel,
                                           after: Self.parents(selected.map { ($0.job, $0.file.path) })) { entry in
                        await runner.run(entry.job, file: entry.file, output: entry.output, stores: stores, options: options)
                    }
                }
            }
        } catch {
            await client.settleTokens(within: options.stopGrace)
            await remote?.end()
            throw error
        }
        await client.settleTokens(within: options.stopGrace)
        await remote?.end()
        let (outcomes, stop) = ran
        var summary = RunSummary(jobs: outcomes.compactMap { $0 }, interrupted: stop != nil || Task.isCancelled,
                                 timedOut: stop == .deadline, signal: stop?.signal)
        summary.state = await remote?.summary
        return summary
    }

    /// For each job, the index of its parent (`parent`, within its file) among `jobs`, if there.
    static func parents(_ jobs: [(job: JobSpec, file: String)]) -> [Int?] {
        jobs.map { entry in
            entry.job.parent.flatMap { name in jobs.firstIndex { $0.file == entry.file && $0.job.name == name } }
        }
    }

    /// Runs one job on its database, taken from `stores` and given back when the job ends;
    /// the last job to give a database back checkpoints it. A child job takes its parent's too.
    /// The job is a span, the parent of its requests'.
    func run(_ job: JobSpec, file: JobFile, output: String, stores: OpenStores, options: Options) async -> JobOutcome {
        await withSpan(RunSpans.jobSpanName(job.name)) { span in
            RunSpans.started(job, span: span)
            let outcome = await runTaking(job, file: file, output: output, stores: stores, options: options)
            RunSpans.ended(outcome, span: span)
            return outcome
        }
    }

    private func runTaking(_ job: JobSpec, file: JobFile, output: String, stores: OpenStores, options: Options) async -> JobOutcome {
        var taken: [String] = []
        func take(_ database: String, _ what: String) throws(JobFailure) -> TableStore {
            let path = (output as NSString).appendingPathComponent(database)
            do {
                let store = try stores.take(path)
                taken.append(path)
                return store
            } catch {
                throw .open(job: job.name, path: path, what: what, error)
            }
        }
        let outcome: JobOutcome
        // When the job last succeeded: in this run, or as the store knows it.
        var lastSuccess: String?
        do {
            let store = try take(job.database, "")
            // A child job reads and settles its parents in the parent's database.
            var family: Family?
            if let name = job.parent, let parent = file.jobs.first(where: { $0.name == name }) {
                family = Family(parent: parent, store: try take(parent.database, ", its parent's database"))
            }
            outcome = await run(job, file: file, output: output, store: store, family: family, options: options)
            lastSuccess = outcome.status == .ok ? outcome.finishedAt
                : try? await store.lastSuccess(job: job.name, account: job.account)
        } catch {
            var walk = WalkResult()
            walk.error = error
            let now = Timestamp.string(Date())
            outcome = JobOutcome(job: job, file: file.path, database: (output as NSString).appendingPathComponent(job.database),
                                 ending: .failed, walk: walk, pruned: 0, files: nil, startedAt: now, finishedAt: now, seconds: 0)
        }
        WalkMetrics(job: job.name).ended(outcome.status, refreshAfter: job.refreshAfter,
                                         lastSuccess: lastSuccess.flatMap(Timestamp.date))
        for path in taken.reversed() {
            guard let last = stores.giveBack(path) else { continue }
            do {
                try await last.dropSupersededChanges()
                try await last.checkpoint()
            } catch {
                logger.warning("cannot tidy or checkpoint the database", metadata: ["job": "\(job.name)", "error": "\(error)"])
            }
        }
        return outcome
    }

    func run(_ job: JobSpec, file: JobFile, output: String, store: TableStore, family: Family? = nil,
             options: Options) async -> JobOutcome {
        if let deferred = await deferredEarlier(job, file: file, store: store, child: family != nil) { return deferred }
        let clock = ContinuousClock.now
        let startedAt = Timestamp.string(Date())
        var walkStartedAt = startedAt
        var walk = WalkResult()
        var files: DownloadSummary?
        var since: SinceValue?
        let relay = progress.map(ProgressRelay.init)
        var parents: ParentWalks?
        var pruned = 0
        // Typed columns added to stored records: their mismatches are counted among all of them.
        var recount: [RecordColumn] = []
        do {
            recount = try await store.prepare(table: job.table, child: family != nil, columns: job.columns,
                                              explode: job.explode)
            let start = try await store.startWalk(job: job.name, account: job.account, table: job.table, at: startedAt,
                                                  fresh: options.refresh || family != nil)
            walkStartedAt = start.startedAt
            since = try await store.since(for: job, resumed: start.isResumed, refresh: options.refresh)
            let job = job.incremental == nil ? job : job.filling("since", with: since)
            relay?.walked(JobProgress(job: job.name, page: nil, lastPage: job.pages.to, walk: walk,
                                      files: job.downloads.isEmpty ? nil : DownloadSummary()))
            // The walk is what a stop cuts: the pages in flight are cancelled, and everything
            // after it (the walk's state, the run's row) is written whole.
            let walker = { @Sendable [self] (downloader: Downloader?) async -> (WalkResult, ParentWalks?, Int) in
                await cancelWhenGracefulShutdown {
                    guard let family else {
                        let walker = PageWalker(job: job, store: store, client: client, maxPages: options.maxPages,
                                                refresh: options.refresh, retry: options.retry, limiter: limiter,
                                                quota: quota, logger: logger, progress: relay?.walked, downloader: downloader,
                                                pagesAhead: options.pagesAhead)
                        return (await walker.walk(from: start), nil, 0)
                    }
                    return await walkChildren(job, family: family, store: store, options: options, relay: relay,
                                              downloader: downloader)
                }
            }
            if job.downloads.isEmpty {
                (walk, parents, pruned) = await walker(nil)
            } else {
                // A failed download never fails its job; the files of stored pages are fetched
                // even when the walk failed. What earlier runs did not get is tried first.
                let unfinished = try await store.unfinishedFiles(job: job.name)
                let walked: (WalkResult, ParentWalks?, Int)
                (walked, files) = await Downloader.with(job: job, store: store, output: output, client: client,
                                                        limiter: limiter, quota: quota, retry: options.retry, logger: logger,
                                                        onChange: relay?.downloaded) { downloader in
                    downloader.enqueue(unfinished.map { RedactedURL(real: $0, redactor: job.redactor) })
                    return await walker(downloader)
                }
                (walk, parents, pruned) = walked
            }
        } catch {
            walk.error = walk.error ?? .store(job: job.name, path: store.path, error)
        }
        var ending = WalkEnding(walk)
        do {
            // A first walk's columns and their indexes are made once it has stored its pages, however it ended.
            try await store.completeColumns(table: job.table, columns: job.columns)
            try await store.indexColumns(table: job.table, columns: job.columns)
            try await store.finishWalk(job: job.name, account: job.account, state: ending, at: Timestamp.string(Date()),
                                       resumeAfter: walk.error?.resumeAfter)
            // The pages of earlier `{since}` values are never asked for again. (Pages within
            // `refresh_after` are walked from their stored copies without being fetched: kept.)
            if ending == .complete, job.incremental != nil, job.refreshAfter == nil {
                try await store.forgetPages(job: job.name, account: job.account, notFetchedSince: walkStartedAt)
            }
            // A child job prunes each parent's children as it walks them.
            if ending == .complete, job.prune, family == nil {
                pruned = try await store.prune(table: job.table, account: job.account, notSeenSince: walkStartedAt,
                                               job: job.name, shared: job.shareTable)
            }
        } catch {
            walk.error = walk.error ?? .store(job: job.name, path: store.path, error)
            if ending.status == .ok { ending = .failed }
        }
        let columnWarnings = await columnWarnings(job, written: walk.counts.mismatches, recount: recount, store: store)
        let elapsed = ContinuousClock.now - clock
        let seconds = elapsed.seconds
        WalkMetrics(job: job.name).record(walk, elapsed: elapsed)
        let outcome = JobOutcome(job: job, file: file.path, database: store.path, ending: ending, walk: walk,
                                 pruned: pruned, files: files, startedAt: startedAt,
                                 finishedAt: Timestamp.string(Date()), seconds: seconds, since: since, parents: parents,
                                 columnWarnings: columnWarnings)
        do {
            try await store.record(run: outcome)
        } catch {
            logger.error("cannot record the run", metadata: ["job": "\(job.name)", "error": "\(error)"])
        }
        progress?(JobProgress(job: job.name, ending: ending, page: walk.lastStored, lastPage: job.pages.to, walk: walk,
                              files: files))
        switch ending.status {
        case .ok: logger.info("job done", metadata: ["job": "\(job.name)", "pages": "\(walk.pages)", "stop": "\(walk.stop)"])
        case .failed: logger.error("job failed", metadata: ["job": "\(job.name)", "error": "\(walk.error?.description ?? "")"])
        case .interrupted: logger.warning("job interrupted", metadata: ["job": "\(job.name)", "pages": "\(walk.pages)"])
        case .deferred:
            logger.warning("job deferred", metadata: ["job": "\(job.name)", "pages": "\(walk.pages)",
                                                     "until": "\(walk.error?.resumeAfter ?? "")"])
        }
        return outcome
    }

    /// The typed columns that are NULL for values of another type, each logged as a warning: among the records
    /// the walk wrote (new or changed; `written`, by typed column, as the walk counted them), and for a column of
    /// `recount`, added to the table's stored records by this run, among all the account's records.
    private func columnWarnings(_ job: JobSpec, written: [Int], recount: [RecordColumn], store: TableStore) async -> [ColumnWarning] {
        var recounted: [ColumnWarning] = []
        do {
            recounted = try await store.columnWarnings(table: job.table, account: job.account, columns: recount)
        } catch {
            logger.error("cannot count the columns' values of another type", metadata: ["job": "\(job.name)", "error": "\(error)"])
        }
        let again = Set(recount.map(\.name))
        let warnings = zip(job.columns.filter { $0.type != nil }, 0...).compactMap { column, index -> ColumnWarning? in
            guard let type = column.type else { return nil }
            if again.contains(column.name) { return recounted.first { $0.column == column.name } }
            let records = index < written.count ? written[index] : 0
            return records > 0 ? ColumnWarning(column: column.name, type: type, records: records) : nil
        }
        for warning in warnings {
            logger.warning("column values of another type are NULL", metadata: [
                "job": "\(job.name)", "column": "\(warning.column)", "type": "\(warning.type.rawValue)", "records": "\(warning.records)",
            ])
        }
        return warnings
    }
}
