import Foundation

/// What `--report FILE` writes: the whole run as JSON, one entry per job.
public struct RunReport: Sendable, Codable, Equatable {
    public struct Records: Sendable, Codable, Equatable {
        public var new: Int
        public var updated: Int
        public var unchanged: Int
        public var rejected: Int
        public var pruned: Int
    }

    public struct Pages: Sendable, Codable, Equatable {
        /// Pages walked: the three below together.
        public var total: Int
        public var fetched: Int
        public var notModified: Int
        /// Not requested: fetched within `refresh_after`.
        public var skipped: Int
    }

    public struct Files: Sendable, Codable, Equatable {
        public struct Failed: Sendable, Codable, Equatable {
            public var url: String
            public var error: String
        }

        public var downloaded: Int
        public var bytes: Int
        public var failed: [Failed]
    }

    public struct Rejected: Sendable, Codable, Equatable {
        public var page: Int
        public var index: Int
        public var reason: String
    }

    public struct Job: Sendable, Codable, Equatable {
        public var job: String
        public var file: String
        public var table: String
        public var database: String
        public var account: String
        public var status: JobResult
        public var stopReason: String
        /// The walk saw everything (a stop condition or `pages.to`), as `prune` requires.
        public var complete: Bool
        public var pages: Pages
        public var resumedAt: Int?
        public var records: Records
        public var rejected: [Rejected]
        public var retries: Int
        public var bytes: Int
        public var durationSeconds: Double
        /// Downloads, for a job with `downloads`.
        public var files: Files?
        public var error: String?
    }

    public var startedAt: String
    public var finishedAt: String
    public var exitStatus: Int
    public var jobs: [Job]

    /// `signal`: the signal that stopped the run, if one did (its exit status is 128 + it).
    public init(summary: RunSummary, startedAt: String, finishedAt: String, signal: Int32? = nil) {
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        exitStatus = signal.map { 128 + Int($0) } ?? (summary.allSucceeded ? 0 : 1)
        jobs = summary.reports.map { report in
            let walk = report.walk
            return Job(
                job: report.job, file: report.file, table: report.table, database: report.database,
                account: report.account, status: report.result, stopReason: walk.stop.description,
                complete: report.succeeded && walk.stop.isComplete,
                pages: Pages(total: walk.pages, fetched: walk.pagesFetched, notModified: walk.pagesNotModified,
                             skipped: walk.pagesSkipped),
                resumedAt: walk.resumedAt,
                records: Records(new: walk.counts.new, updated: walk.counts.updated, unchanged: walk.counts.unchanged,
                                 rejected: walk.rejected.count, pruned: report.pruned),
                rejected: walk.rejected.map { Rejected(page: $0.page, index: $0.index, reason: $0.reason) },
                retries: walk.retries, bytes: walk.bytes, durationSeconds: (report.seconds * 1000).rounded() / 1000,
                files: report.files.map { files in
                    Files(downloaded: files.downloaded, bytes: files.bytes,
                          failed: files.failed.map { Files.Failed(url: $0.url, error: $0.error) })
                },
                error: walk.error)
        }
    }

    /// Pretty JSON with snake_case keys, written whole: to `FILE.partial`, then renamed.
    public func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        var data = try encoder.encode(self)
        data.append(0x0A)
        try WholeFile.write(data, to: path)
    }
}
