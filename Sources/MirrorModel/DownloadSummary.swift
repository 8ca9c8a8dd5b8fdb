/// A file the run could not get.
package struct FileFailure: Sendable, Codable, Equatable {
    /// Redacted.
    package let url: String
    package let error: String

    package init(url: String, error: String) {
        self.url = url
        self.error = error
    }
}

/// What a job's downloads did in one run.
package struct DownloadSummary: Sendable, Codable, Equatable {
    package var downloaded = 0
    package var bytes = 0
    package var failed: [FileFailure] = []

    package init(downloaded: Int = 0, bytes: Int = 0, failed: [FileFailure] = []) {
        self.downloaded = downloaded
        self.bytes = bytes
        self.failed = failed
    }
}
