package import Foundation

/// A run's status, as the summary, `--report`, `_mirror_runs` and `status` say it: the words
/// of `WalkEnding.status`, and of runs recorded before.
package enum JobResult: String, Sendable, Codable, Equatable {
    case ok, failed
    /// Stopped by a signal: what was stored stays, and the next run resumes there.
    case interrupted
    /// Paused: the API asked for a longer wait than `max_wait`. What was stored stays, and
    /// the first run after `resume_after` resumes there.
    case deferred
}

/// One job's outcome in one run: the one value the summary prints, `--report` lists,
/// `_mirror_runs` keeps (its `outcome` column, beside the columns docs/on-disk-format.md lists) and
/// `status` shows as the job's last run. Encoded with snake_case keys (`--report`, in
/// docs/commands.md).
package struct JobOutcome: Sendable, Codable, Equatable {
    package struct Pages: Sendable, Codable, Equatable {
        /// Pages walked: the three below together.
        package var total: Int
        package var fetched: Int
        package var notModified: Int
        /// Not requested: fetched within `refresh_after`.
        package var skipped: Int

        package init(
            total: Int,
            fetched: Int,
            notModified: Int,
            skipped: Int
        ) {
            self.total = total
            self.fetched = fetched
            self.notModified = notModified
            self.skipped = skipped
        }
    }

    package struct Records: Sendable, Codable, Equatable {
        package var new: Int
        package var updated: Int
        package var unchanged: Int
        package var rejected: Int
        package var pruned: Int
        /// Removed because a page marked them deleted (`deleted`).
        package var deleted: Int

        package init(new: Int, updated: Int, unchanged: Int, rejected: Int, pruned: Int, deleted: Int = 0) {
            self.new = new
            self.updated = updated
            self.unchanged = unchanged
            self.rejected = rejected
            self.pruned = pruned
            self.deleted = deleted
        }

        /// Outcomes recorded before `deleted` was counted have none.
        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            new = try container.decode(Int.self, forKey: .new)
            updated = try container.decode(Int.self, forKey: .updated)
            unchanged = try container.decode(Int.self, forKey: .unchanged)
            rejected = try container.decode(Int.self, forKey: .rejected)
            pruned = try container.decode(Int.self, forKey: .pruned)
            deleted = try container.decodeIfPresent(Int.self, forKey: .deleted) ?? 0
        }
    }

    package var job: String
    /// The job file, as given on the command line.
    package var file: String
    package var table: String
    package var database: String
    package var account: String
    package var status: JobResult
    package var startedAt: String
    package var finishedAt: String
    /// Why the walk ended, as the summary prints it.
    package var stopReason: String
    /// The walk saw everything (a stop condition or `pages.to`), as `prune` requires.
    package var complete: Bool
    package var pages: Pages
    /// The page a resumed walk started at.
    package var resumedAt: Int?
    package var records: Records
    package var rejected: [RejectedRecord]
    package var retries: Int
    /// Response bytes of the walk's pages.
    package var bytes: Int
    package var durationSeconds: Double
    /// Downloads, for a job with `downloads`.
    package var files: DownloadSummary?
    /// Redacted.
    package var error: String?
    /// The `{since}` the walk used (`incremental`); absent for other jobs and when it was empty.
    package var since: String?
    /// For a child job (`parent`): the parents walked, failed, and the children of gone parents deleted.
    package var parents: ParentWalks?
    /// Configured paths the responses did not hold (see `WalkResult.missingPaths`); absent
    /// when there are none.
    package var warnings: [String]?
    /// For a deferred job: when it may resume (UTC ISO 8601); absent otherwise.
    package var resumeAfter: String?
    /// Typed columns that are NULL where the walk's records hold a value of another type,
    /// by column, in the job's order; absent when there are none.
    package var columnWarnings: [ColumnWarning]?

    package init(
        job: String,
        file: String,
        table: String,
        database: String,
        account: String,
        status: JobResult,
        startedAt: String,
        finishedAt: String,
        stopReason: String,
        complete: Bool,
        pages: Pages,
        resumedAt: Int? = nil,
        records: Records,
        rejected: [RejectedRecord],
        retries: Int,
        bytes: Int,
        durationSeconds: Double,
        files: DownloadSummary? = nil,
        error: String? = nil,
        since: String? = nil,
        parents: ParentWalks? = nil,
        warnings: [String]? = nil,
        resumeAfter: String? = nil,
        columnWarnings: [ColumnWarning]? = nil
    ) {
        self.job = job
        self.file = file
        self.table = table
        self.database = database
        self.account = account
        self.status = status
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.stopReason = stopReason
        self.complete = complete
        self.pages = pages
        self.resumedAt = resumedAt
        self.records = records
        self.rejected = rejected
        self.retries = retries
        self.bytes = bytes
        self.durationSeconds = durationSeconds
        self.files = files
        self.error = error
        self.since = since
        self.parents = parents
        self.warnings = warnings
        self.resumeAfter = resumeAfter
        self.columnWarnings = columnWarnings
    }

    package var succeeded: Bool { status == .ok }

    package init(job: JobSpec, file: String, database: String, ending: WalkEnding, walk: WalkResult, pruned: Int,
         files: DownloadSummary?, startedAt: String, finishedAt: String, seconds: Double, since: SinceValue? = nil,
         parents: ParentWalks? = nil, columnWarnings: [ColumnWarning] = []) {
        self.job = job.name
        self.file = file
        table = job.table
        self.database = database
        account = job.account
        status = ending.status
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        stopReason = walk.stop.description
        complete = ending == .complete
        pages = Pages(total: walk.pages, fetched: walk.pagesFetched, notModified: walk.pagesNotModified,
                      skipped: walk.pagesSkipped)
        resumedAt = walk.resumedAt
        records = Records(new: walk.counts.new, updated: walk.counts.updated, unchanged: walk.counts.unchanged,
                          rejected: walk.rejected.count, pruned: pruned, deleted: walk.counts.deleted)
        rejected = walk.rejected
        retries = walk.retries
        bytes = walk.bytes
        durationSeconds = (seconds * 1000).rounded() / 1000
        self.files = files
        error = walk.error?.description
        let warnings = walk.missingPaths.map(\.description) + walk.warnings
        self.warnings = warnings.isEmpty ? nil : warnings
        self.since = since?.text
        self.parents = parents
        resumeAfter = walk.error?.resumeAfter
        self.columnWarnings = columnWarnings.isEmpty ? nil : columnWarnings
    }

    /// snake_case keys, sorted: as `--report` and `_mirror_runs.outcome` hold it.
    package static func encoder(pretty: Bool) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            : [.sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return encoder
    }

    package static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }
}

/// The whole run.
package struct RunSummary: Sendable {
    /// In the order the jobs were selected.
    package var jobs: [JobOutcome]
    /// A signal or `--max-time` stopped the run.
    package var interrupted = false
    /// `--max-time` stopped the run.
    package var timedOut = false
    /// The signal that stopped the run, if one did.
    package var signal: Int32?
    /// What `--state` pulled and pushed, when the run kept its state in a remote store.
    package var state: StateSummary?

    package var allSucceeded: Bool { jobs.allSatisfy(\.succeeded) }

    package init(jobs: [JobOutcome], interrupted: Bool = false, timedOut: Bool = false, signal: Int32? = nil) {
        self.jobs = jobs
        self.interrupted = interrupted
        self.timedOut = timedOut
        self.signal = signal
    }
}

extension Duration {
    /// The duration in seconds, as reports give it.
    package var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

/// What keeping a run's state in a remote store (`--state`) did: what the run pulled before
/// its walk and pushed during and after it.
package struct StateSummary: Sendable, Equatable {
    /// `s3://bucket/prefix`, `file:///dir`.
    package var location: String
    /// `I/N`.
    package var shard: String
    package var pulledDatabases = 0
    package var pulledFiles = 0
    package var pulledBytes = 0
    /// Pushes that wrote a new generation.
    package var pushes = 0
    package var pushedDatabases = 0
    package var pushedFiles = 0
    package var pushedBytes = 0
    /// The remote generation the folder has at the end.
    package var generation: Int?
    /// Why the last push failed, if it did: the folder keeps what it holds, the next run pushes it.
    package var failure: String?
    /// Another worker took the shard's lease while the run held it: the run stopped and pushed nothing more.
    package var leaseLost = false

    package init(location: String, shard: String) {
        self.location = location
        self.shard = shard
    }
}
