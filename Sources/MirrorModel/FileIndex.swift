/// Where the outcome of each download is kept (`_mirror_files`): the store, as the runner
/// hands it to the downloader.
package protocol FileIndex: Sendable {
    func record(files: [FileOutcome]) async throws
}

/// Takes the files a stored page points to while the walk goes on: the downloader, as the
/// runner hands it to the walker.
package protocol FileQueue: Sendable {
    /// Queues each URL not queued before in this run.
    func enqueue(_ urls: [RedactedURL])
    /// What the downloads have done so far.
    var summary: DownloadSummary { get }
}
