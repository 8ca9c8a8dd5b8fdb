import Foundation
import Logging
import Synchronization

/// A file the run could not get.
public struct FileFailure: Sendable, Codable, Equatable {
    /// Redacted.
    public let url: String
    public let error: String
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

/// Fetches the files a job's records point to, up to `download_concurrency` at once,
/// while the walk goes on. Each URL is fetched at most once per run.
public final class Downloader: Sendable {
    private final class State: Sendable {
        /// URLs queued in this run.
        let queued = Mutex(Set<String>())
        let summary = Mutex(DownloadSummary())
        /// Outcomes not recorded in `_mirror_files` yet: written a batch at a time.
        let unrecorded = Mutex<[FileOutcome]>([])
    }

    /// Outcomes recorded in one transaction: one write per file would cost a transaction each.
    static let recordBatch = 64

    private let state = State()
    private let continuation: AsyncStream<RedactedURL>.Continuation

    private init(continuation: AsyncStream<RedactedURL>.Continuation) {
        self.continuation = continuation
    }

    /// Runs `body` with a downloader for `job`. The files of the pages `body` stores are
    /// fetched by a child task while it runs; when this returns, every one has ended, or,
    /// if the task was cancelled, been abandoned with nothing left in place.
    /// `onChange` is called with the summary after every file.
    public static func with<T: Sendable>(
        job: JobSpec, store: TableStore, output: String, client: HTTPClient, limiter: RateLimiter, retry: RetryPolicy,
        logger: Logger, onChange: (@Sendable (DownloadSummary) -> Void)? = nil,
        _ body: (Downloader) async -> T
    ) async -> (T, DownloadSummary) {
        let (stream, continuation) = AsyncStream.makeStream(of: RedactedURL.self)
        let downloader = Downloader(continuation: continuation)
        // A file on another origin than the API's (a CDN) gets no header holding a secret.
        let apiURL = job.url.url(page: job.pages.from, cursor: nil, redactor: job.redactor).real
        let fetcher = FileFetcher(job: job, output: output, client: client,
                                  sender: RetryingSender(job: job, limiter: limiter, policy: retry, logger: logger),
                                  logger: logger, apiURL: apiURL,
                                  plainHeaders: job.headers.filter { !$0.value.holdsSecret }, folders: FileFolders(output: output))
        let state = downloader.state
        // Counts each file as it ends, from its own task, so that progress moves between
        // pages; records it with the next batch.
        let settle: @Sendable (FileOutcome) -> [FileOutcome] = { outcome in
            let summary = state.summary.withLock { summary in
                switch outcome.status {
                case .ok:
                    summary.downloaded += 1
                    summary.bytes += outcome.size ?? 0
                case .failed, .refused:
                    summary.failed.append(FileFailure(url: outcome.url.description, error: outcome.error ?? "failed"))
                }
                return summary
            }
            onChange?(summary)
            return state.unrecorded.withLock { unrecorded in
                unrecorded.append(outcome)
                guard unrecorded.count >= recordBatch else { return [] }
                defer { unrecorded.removeAll(keepingCapacity: true) }
                return unrecorded
            }
        }
        let record: @Sendable ([FileOutcome]) async -> Void = { batch in
            do {
                try await store.record(files: batch)
            } catch {
                logger.error("cannot record downloads", metadata: ["job": "\(job.name)", "error": "\(error)"])
            }
        }
        let width = job.downloadConcurrency
        return await withTaskGroup(of: Void.self) { group in
            group.addTask {
                // Starts each queued URL as soon as fewer than `width` are in flight.
                await withTaskGroup(of: Void.self) { files in
                    var running = 0
                    for await url in stream {
                        if running >= width {
                            await files.next()
                            running -= 1
                        }
                        files.addTask {
                            if let outcome = await fetcher.fetch(url) { await record(settle(outcome)) }
                        }
                        running += 1
                    }
                }
            }
            let value = await body(downloader)
            continuation.finish()
            await group.waitForAll()
            // The last batch is recorded even when the run was interrupted: those files are on disk.
            let rest = state.unrecorded.withLock { unrecorded in
                defer { unrecorded.removeAll() }
                return unrecorded
            }
            await Task { await record(rest) }.value
            return (value, downloader.summary)
        }
    }

    /// Queues files for download; a URL already queued in this run is ignored.
    public func enqueue(_ urls: [RedactedURL]) {
        let fresh = state.queued.withLock { queued in urls.filter { queued.insert($0.real).inserted } }
        for url in fresh { continuation.yield(url) }
    }

    /// Downloads finished so far.
    public var summary: DownloadSummary { state.summary.withLock { $0 } }
}

/// One download, start to end: the file lands under its final name whole, or not at all.
struct FileFetcher: Sendable {
    let job: JobSpec
    let output: String
    let client: HTTPClient
    let sender: RetryingSender
    let logger: Logger
    /// A request of the job's own: files on its origin get every header.
    let apiURL: String
    /// The job's headers without those holding a secret, for files on other origins.
    let plainHeaders: [Header]
    let folders: FileFolders

    /// Downloads `url` and says how it ended; nil when the task was cancelled: the
    /// download is abandoned, nothing of it kept or recorded (it is tried again next run).
    func fetch(_ url: RedactedURL) async -> FileOutcome? {
        guard var outcome = await attempt(url), !Task.isCancelled else { return nil }
        outcome.error = outcome.error.map(job.redactor.redact)
        if outcome.status != .ok {
            logger.warning("download failed", metadata: [
                "job": "\(job.name)", "url": "\(url)", "error": "\(outcome.error ?? "")",
            ])
        }
        return outcome
    }

    private func attempt(_ url: RedactedURL) async -> FileOutcome? {
        var outcome = FileOutcome(url: url, status: .failed, time: Timestamp.string(Date()))
        guard HTTPClient.isHTTP(url.real) else {
            outcome.status = .refused
            outcome.error = "not an absolute http(s) URL: refused"
            return outcome
        }
        let relative = FileNaming.relativePath(for: url.real)
        let final = output + "/" + relative
        let partial: String
        do {
            partial = try folders.prepare(for: relative)
        } catch {
            outcome.error = "cannot create the files folder: \(error.reason)"
            return outcome
        }
        let headers = HTTPClient.sameOrigin(apiURL, url.real) ? job.headers : plainHeaders
        let request = HTTPRequest(method: "GET", url: url, headers: headers, body: nil, timeout: job.timeout,
                                  maxBytes: job.maxFileSize, redactor: job.redactor)
        let descriptor = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            outcome.error = "cannot create a temporary file: \(String(cString: strerror(errno)))"
            return outcome
        }
        var open = true
        defer {
            if open { close(descriptor) }
            unlink(partial)
        }
        let client = client
        let sent = await sender.send(url, retryable: { (download: HTTPClient.Download) in
            RetryPolicy.isRetryable(status: download.status)
                ? RetryingSender.Retryable(status: download.status, retryAfter: download.headers["retry-after"]) : nil
        }, exchange: { () throws(HTTPError) in
            // Each attempt writes the file from its start.
            guard ftruncate(descriptor, 0) == 0, lseek(descriptor, 0, SEEK_SET) == 0 else {
                throw .writeFailed(url, String(cString: strerror(errno)), status: nil)
            }
            return try await client.download(request, to: descriptor)
        })
        outcome.time = Timestamp.string(Date())
        switch sent.result {
        case let .failure(error):
            if error.kind == .cancelled { return nil }
            outcome.httpStatus = error.status
            outcome.error = error.reason + sent.afterRetries
            return outcome
        case let .success(download):
            outcome.httpStatus = download.status
            guard (200..<300).contains(download.status) else {
                outcome.error = "HTTP \(download.status)" + sent.afterRetries
                return outcome
            }
            open = false
            guard close(descriptor) == 0, rename(partial, final) == 0 else {
                outcome.error = "cannot move the file into place: \(String(cString: strerror(errno)))"
                return outcome
            }
            outcome.status = .ok
            outcome.path = relative
            outcome.size = download.size
            outcome.sha256 = download.sha256
            outcome.contentType = download.headers["content-type"]
            outcome.etag = download.headers["etag"]
            outcome.lastModified = download.headers["last-modified"]
            outcome.error = nil
            return outcome
        }
    }
}

/// The folders downloads are written to, each created once per run, and the names of
/// temporary files: a run's own, numbered (only one run at a time holds the output folder).
final class FileFolders: Sendable {
    struct Failure: Error {
        let reason: String
    }

    private let output: String
    private let made = Mutex(Set<String>())
    private let counter = Atomic<Int>(0)

    init(output: String) {
        self.output = output
    }

    /// Makes the folders `relative` and its temporary file need; returns the temporary
    /// file's path, unique in this run.
    func prepare(for relative: String) throws(Failure) -> String {
        let bucket = output + "/" + relative[..<(relative.lastIndex(of: "/") ?? relative.endIndex)]
        for folder in [output + "/" + FileNaming.folder, output + "/" + FileNaming.partialFolder, bucket] {
            try make(folder)
        }
        let number = counter.wrappingAdd(1, ordering: .relaxed).newValue
        return output + "/" + FileNaming.partialFolder + "/" + FileNaming.temporaryName(pid: getpid(), number: number)
    }

    private func make(_ folder: String) throws(Failure) {
        if made.withLock({ $0.contains(folder) }) { return }
        if mkdir(folder, 0o755) != 0, errno != EEXIST {
            throw Failure(reason: String(cString: strerror(errno)))
        }
        made.withLock { _ = $0.insert(folder) }
    }
}
