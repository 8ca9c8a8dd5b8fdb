/// What `mirror status` shows: every table of an output folder and each job's last run.
package struct StatusReport: Sendable, Codable, Equatable {
    package struct Table: Sendable, Codable, Equatable {
        package var database: String
        package var table: String
        package var records: Int
        package var accounts: Int

        package init(
            database: String,
            table: String,
            records: Int,
            accounts: Int
        ) {
            self.database = database
            self.table = table
            self.records = records
            self.accounts = accounts
        }
    }

    package struct Files: Sendable, Codable, Equatable {
        /// On disk.
        package var downloaded: Int
        package var bytes: Int
        /// Tried and not got (retried by the next run), or refused.
        package var failed: Int
        /// Not tried yet.
        package var pending: Int

        package init(
            downloaded: Int,
            bytes: Int,
            failed: Int,
            pending: Int
        ) {
            self.downloaded = downloaded
            self.bytes = bytes
            self.failed = failed
            self.pending = pending
        }
    }

    package struct Job: Sendable, Codable, Equatable {
        package var job: String
        package var account: String
        package var table: String
        package var database: String
        /// The outcome of its last run, as `--report` writes it.
        package var lastRun: JobOutcome?
        /// The job's downloads as they stand, for a job that has any.
        package var files: Files?
        /// When the last successful run finished, if any.
        package var lastSuccess: String?
        package var stale: Bool
        /// For an incremental job: the `{since}` its last walk used, and the highest value
        /// of its incremental path stored (from which the next walk's is taken).
        package var since: String?
        package var highWater: String?
        package var highWaterPath: String?
        /// For a child job (`parent`): parent records queued for it and not walked yet,
        /// and those whose walk failed (walked again by the next run).
        package var parentsPending: Int?
        package var parentsFailed: Int?

        package init(
            job: String,
            account: String,
            table: String,
            database: String,
            lastRun: JobOutcome? = nil,
            files: Files? = nil,
            lastSuccess: String? = nil,
            stale: Bool,
            since: String? = nil,
            highWater: String? = nil,
            highWaterPath: String? = nil,
            parentsPending: Int? = nil,
            parentsFailed: Int? = nil
        ) {
            self.job = job
            self.account = account
            self.table = table
            self.database = database
            self.lastRun = lastRun
            self.files = files
            self.lastSuccess = lastSuccess
            self.stale = stale
            self.since = since
            self.highWater = highWater
            self.highWaterPath = highWaterPath
            self.parentsPending = parentsPending
            self.parentsFailed = parentsFailed
        }
    }

    package var output: String
    package var tables: [Table]
    package var jobs: [Job]

    package init(output: String, tables: [Table], jobs: [Job]) {
        self.output = output
        self.tables = tables
        self.jobs = jobs
    }
}
