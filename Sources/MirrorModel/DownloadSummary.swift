/// A file the run could not get.
public struct FileFailure: Sendable, Codable, Equatable {
    /// Redacted.
    public let url: String
    public let error: String

    package init(url: String, error: String) {
        self.url = url
        self.error = error
    }
}

/// What a job's downloads did in one run.
public struct DownloadSummary: Sendable, Codable, Equatable {
    public var downloaded = 0
    public var bytes = 0
    public var failed: [FileFailure] = []

    public init(downloaded: Int = 0, bytes: Int = 0, failed: [FileFailure] = []) {
        self.downloaded = downloaded
        self.bytes = bytes
        self.failed = failed
    }
}
