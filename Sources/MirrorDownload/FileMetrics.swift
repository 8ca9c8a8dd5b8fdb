import Metrics
import MirrorModel

/// What a job's downloads count through swift-metrics: files downloaded and failed (a URL
/// refused counts as failed), and the bytes of those downloaded. Made once per job's
/// downloader. A file already downloaded is never queued (the store leaves it out of a
/// page's pending files), so none is counted as unchanged.
struct FileMetrics: Sendable {
    private let downloaded: Counter
    private let failed: Counter
    private let bytes: Counter

    init(job: String) {
        let dimensions = [("job", job)]
        downloaded = Counter(label: "mirror_files_total", dimensions: dimensions + [("outcome", "downloaded")])
        failed = Counter(label: "mirror_files_total", dimensions: dimensions + [("outcome", "failed")])
        bytes = Counter(label: "mirror_file_bytes_total", dimensions: dimensions)
    }

    func ended(_ outcome: FileOutcome) {
        switch outcome.status {
        case .ok:
            downloaded.increment()
            bytes.increment(by: outcome.size ?? 0)
        case .failed, .refused:
            failed.increment()
        }
    }
}
