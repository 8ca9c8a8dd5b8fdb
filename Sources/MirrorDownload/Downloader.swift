import Foundation
package import Logging
import MirrorFiles
package import MirrorHTTP
package import MirrorModel
import ServiceLifecycle
import Synchronization

/// Fetches the files a job's records point to, up to `download_concurrency` at once,
/// while the walk goes on. Each URL is fetched at most once per run.
package final class Downloader: FileQueue {
    private final class State: Sendable {
        /// URLs queued in this run.
        let queued = Mutex(Set<String>())
        let summary = Mutex(DownloadSummary())
        /// Outcomes not yet handed to the recording task.
        let unrecorded = Mutex([FileOutcome]())
    }

    /// Outcomes recorded in one transaction, and handed to the recording task at once: one
    /// write per file would cost a transaction each, one hand-over per file a task switch.
    static let recordBatch = 64

    private let state = State()
    private let continuation: AsyncStream<RedactedURL>.Continuation

    private init(continuation: AsyncStream<RedactedURL>.Continuation) {
        self.continuation = continuation
    }

    /// Runs `body` with a downloader for `job`. The files of the pages `body` stores are
    /// fetched by a child task while it runs; when this returns, every one has ended, or,
    /// if a graceful stop came (`GracefulStop`) or the task was cancelled, been abandoned with
    /// nothing left in place. What ended is recorded in `store` a batch at a time by a task
    /// of its own, which a stop does not cut: the files on disk are all in the index.
    /// `onChange` is called with the summary after every file.
    package static func with<T: Sendable>(
        job: JobSpec, store: any FileIndex, output: String, client: HTTPClient, limiter: RateLimiter, quota: QuotaPacer,
        retry: RetryPolicy, logger: Logger, onChange: (@Sendable (DownloadSummary) -> Void)? = nil,
        _ body: (Downloader) async -> T
    ) async -> (T, DownloadSummary) {
        let (stream, continuation) = AsyncStream.makeStream(of: RedactedURL.self)
        let downloader = Downloader(continuation: continuation)
        // A file on another origin than the API's (a CDN) gets no header holding a secret.
        let watchdog = DownloadWatchdog(idle: .nanoseconds(Int64(job.timeout * 1e9)), minRate: job.minDownloadRate,
                                        clock: client.clock)
        let fetcher = FileFetcher(job: job, client: client,
                                  sender: RetryingSender(job: job, limiter: limiter, quota: quota, policy: retry, logger: logger,
                                                         clock: client.clock),
                                  logger: logger, origin: job.origin,
                                  plainHeaders: job.headers.filter { !$0.value.holdsSecret }, folders: FileFolders.shared(output: output),
                                  watchdog: watchdog)
        let state = downloader.state
        let metrics = FileMetrics(job: job.name)
        // Counts each file as it ends, from its own task, so that progress moves between pages.
        let settle: @Sendable (FileOutcome) -> Void = { outcome in
            metrics.ended(outcome)
            let summary = state.summary.withLock { summary in
                switch outcome.status {
                case .ok:
                    summary.downloaded += 1
                    summary.bytes += outcome.size ?? 0
                case .failed, .refused:
                    summary.failed.append(FileFailure(url: outcome.url.shortDescription, error: outcome.error ?? "failed"))
                }
                return summary
            }
            onChange?(summary)
        }
        let record: @Sendable ([FileOutcome]) async -> Void = { batch in
            do {
                try await store.record(files: batch)
            } catch {
                logger.error("cannot record downloads", metadata: ["job": "\(job.name)", "error": "\(error)"])
            }
        }
        let (ended, endings) = AsyncStream.makeStream(of: [FileOutcome].self)
        // Takes what ended so far once it makes a batch, or, with `all`, whatever there is.
        let batch: @Sendable (_ all: Bool) -> [FileOutcome]? = { all in
            state.unrecorded.withLock { unrecorded in
                guard unrecorded.count >= (all ? 1 : recordBatch) else { return nil }
                var batch: [FileOutcome] = []
                batch.reserveCapacity(recordBatch)
                swap(&batch, &unrecorded)
                return batch
            }
        }
        let width = job.downloadConcurrency
        return await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await outcomes in ended { await record(outcomes) }
            }
            group.addTask {
                // Starts each queued URL as soon as fewer than `width` are in flight; a stop
                // cancels those in flight and starts no other. The watchdog watches them all,
                // until the last has ended.
                await cancelWhenGracefulShutdown {
                    await withTaskGroup(of: Void.self) { files in
                        files.addTask { await watchdog.run() }
                        var running = 0
                        for await url in stream {
                            if running >= width {
                                await files.next()
                                running -= 1
                            }
                            files.addTask {
                                guard let outcome = await fetcher.fetch(url) else { return }
                                settle(outcome)
                                state.unrecorded.withLock { $0.append(outcome) }
                                if let outcomes = batch(false) { endings.yield(outcomes) }
                            }
                            running += 1
                        }
                        while running > 0, await files.next() != nil {
                            running -= 1
                        }
                        files.cancelAll()
                    }
                }
                if let outcomes = batch(true) { endings.yield(outcomes) }
                endings.finish()
            }
            let value = await body(downloader)
            continuation.finish()
            await group.waitForAll()
            return (value, downloader.summary)
        }
    }

    /// Queues files for download; a URL already queued in this run is ignored.
    package func enqueue(_ urls: [RedactedURL]) {
        let fresh = state.queued.withLock { queued in urls.filter { queued.insert($0.real).inserted } }
        for url in fresh { continuation.yield(url) }
    }

    /// Downloads finished so far.
    package var summary: DownloadSummary { state.summary.withLock { $0 } }
}

/// One download, start to end: the file lands under its final name whole, or not at all.
struct FileFetcher: Sendable {
    package let job: JobSpec
    package let client: HTTPClient
    package let sender: RetryingSender
    package let logger: Logger
    /// The job's own origin: files there get every header.
    package let origin: Origin?
    /// The job's headers without those holding a secret, for files on other origins.
    let plainHeaders: [Header]
    package let folders: FileFolders
    /// Fails a download that stalls or runs too slowly.
    package let watchdog: DownloadWatchdog

    /// Downloads `url` and says how it ended; nil when the task was cancelled: the
    /// download is abandoned, nothing of it kept or recorded (it is tried again next run).
    package func fetch(_ url: RedactedURL) async -> FileOutcome? {
        guard var outcome = await attempt(url), !Task.isCancelled else { return nil }
        outcome.time = Timestamp.string(Date())
        outcome.error = outcome.error.map(job.redactor.redact)
        if outcome.status != .ok {
            logger.warning("download failed", metadata: [
                "job": "\(job.name)", "url": "\(url.shortDescription)", "error": "\(outcome.error ?? "")",
            ])
        }
        return outcome
    }

    private func attempt(_ url: RedactedURL) async -> FileOutcome? {
        // Its time is set when it ends (`fetch`).
        var outcome = FileOutcome(url: url, status: .failed, time: "")
        guard HTTPClient.isHTTP(url.real) else {
            outcome.status = .refused
            outcome.error = "not an absolute http(s) URL: refused"
            return outcome
        }
        let relative = FileNaming.relativePath(for: url.real)
        let temporary: FileFolders.Temporary
        do {
            temporary = try await folders.prepare(for: relative)
        } catch {
            outcome.error = error.reason
            return outcome
        }
        // Where the job sends no secret, every origin gets the same request: no need to ask.
        let own = (job.auth == nil && plainHeaders.count == job.headers.count) || origin?.admits(url.real) == true
        var request = HTTPRequest(method: "GET", url: url, headers: own ? job.headers : plainHeaders, body: nil,
                                  timeout: job.timeout, maxBytes: job.maxFileSize, redactor: job.redactor,
                                  auth: own ? job.auth : nil)
        request.propagateTrace = job.propagateTrace
        let descriptor = temporary.descriptor
        var open = true
        var placed = false
        defer {
            if open { try? FileSystem.close(descriptor) }
            if !placed { folders.discard(temporary.name) }
        }
        let client = client
        var attempts = 0
        let sent = await sender.send(url, retryable: { (download: HTTPClient.Download) in
            RetryPolicy.isRetryable(status: download.status, headers: download.headers)
                ? RetryingSender.Retryable(status: download.status, retryAfter: download.headers["retry-after"]) : nil
        }, answer: { ($0.status, $0.headers) }, exchange: { () throws(HTTPError) in
            // Each attempt writes the file from its start; the first finds it empty.
            attempts += 1
            if attempts > 1 {
                do throws(FileError) {
                    try FileSystem.truncate(descriptor, to: 0)
                } catch {
                    throw .writeFailed(url, error.reason, status: nil)
                }
            }
            return try await client.download(request, to: descriptor, watchdog: watchdog)
        })
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
            do throws(FileError) {
                try FileSystem.close(descriptor)
            } catch {
                outcome.error = "cannot move the file into place: \(error.reason)"
                return outcome
            }
            do {
                try await folders.place(temporary.name, at: relative)
            } catch {
                outcome.error = error.reason
                return outcome
            }
            placed = true
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

/// The folders downloads are written to and the temporary files in them, all opened without
/// following a link: `files/` and `files/.partial` once (a link or a failure there fails
/// every download alike, before its request), and a file's bucket folder (`files/ab`) the
/// first time a download needs it, and again when, as a file is about to be moved in, its
/// name no longer leads to the folder kept. The folders stay open while jobs download into
/// the output folder, which share one `FileFolders` (`shared(output:)`): 258 descriptors,
/// however many jobs run at once, and one more for each bucket folder replaced meanwhile.
/// Temporary files are named by the run's pid and a number counted across the process
/// (only one run at a time holds the output folder).
///
/// A temporary file is created, and moved into place, by one download at a time
/// (`Turnstile`): the kernel takes `files/.partial`'s lock for each anyway, and a thread that
/// waits for it spins, burning a core, while the holder allocates an inode, which on a disk
/// can take long (2,000 files of 100 KB on ext4, median of 7: 2.62 s of CPU against 3.24 s,
/// at the same wall time; on tmpfs no difference).
final class FileFolders: Sendable {
    package struct Failure: Error {
        package let reason: String
    }

    /// A temporary file in `files/.partial`, open for writing.
    struct Temporary {
        package let descriptor: Int32
        package let name: String
    }

    /// `files/` and `files/.partial`, open.
    private struct Opened {
        let files: Int32
        let partial: Int32
    }

    private let output: String
    /// Taken to create a temporary file and to move one into place.
    private let turns = Turnstile()
    /// Opened at the first download, or why not; kept while jobs download into the folder.
    private let opened = Mutex<Result<Opened, Failure>?>(nil)
    /// An open bucket folder, and the file it is.
    private struct Bucket {
        let descriptor: Int32
        let device: UInt64
        let inode: UInt64
    }

    /// Bucket folders opened so far, by name (`ab`), and those whose name came to lead
    /// elsewhere (closed only with the rest: a download may still be using one).
    private let buckets = Mutex<(open: [Substring: Bucket], replaced: [Int32])>(([:], []))
    /// One count for every job of the process: two jobs downloading into one output folder
    /// never pick the same temporary name.
    private static let counter = Atomic<Int>(0)
    private static let pid = FileSystem.processID

    package init(output: String) {
        self.output = output
    }

    /// Those in use for `output`, if a job is downloading into it, else new ones: they are
    /// closed once no job holds them.
    package static func shared(output: String) -> FileFolders {
        let key = (output as NSString).standardizingPath
        return inUse.withLock { inUse in
            if let folders = inUse[key]?.folders { return folders }
            let folders = FileFolders(output: output)
            inUse[key] = Held(folders: folders)
            return folders
        }
    }

    private struct Held {
        weak var folders: FileFolders?
    }

    private static let inUse = Mutex<[String: Held]>([:])

    deinit {
        buckets.withLock { buckets in
            for bucket in buckets.open.values { try? FileSystem.close(bucket.descriptor) }
            for descriptor in buckets.replaced { try? FileSystem.close(descriptor) }
        }
        opened.withLock { opened in
            guard case let .success(folders)? = opened else { return }
            try? FileSystem.close(folders.partial)
            try? FileSystem.close(folders.files)
        }
    }

    /// Makes sure the folders `relative` needs are real folders, made if missing, and
    /// creates its temporary file, unique in this run.
    package func prepare(for relative: String) async throws(Failure) -> Temporary {
        let folders = try openFolders()
        _ = try bucket(of: relative, in: folders.files)
        let number = Self.counter.wrappingAdd(1, ordering: .relaxed).newValue
        let name = FileNaming.temporaryName(pid: Self.pid, number: number)
        // errno is read in the turn: once it is over, the task may go on on another thread.
        do throws(FileError) {
            let descriptor = try await turns.pass { () throws(FileError) in try FileSystem.createNew(name, in: folders.partial) }
            return Temporary(descriptor: descriptor, name: name)
        } catch {
            throw Failure(reason: "cannot create a temporary file: \(error.reason)")
        }
    }

    /// Moves the whole temporary file `name` to `relative`, into its bucket folder as it is now.
    package func place(_ name: String, at relative: String) async throws(Failure) {
        let folders = try openFolders()
        let bucket = try bucket(of: relative, in: folders.files, current: true)
        let slash = relative.utf8.lastIndex(of: UInt8(ascii: "/")) ?? relative.startIndex
        let target = String(relative[relative.index(after: slash)...])
        do throws(FileError) {
            try await turns.pass { () throws(FileError) in try FileSystem.rename(name, in: folders.partial, to: target, in: bucket) }
        } catch {
            throw Failure(reason: "cannot move the file into place: \(error.reason)")
        }
    }

    /// Removes the temporary file `name`, if it is still there.
    package func discard(_ name: String) {
        guard case let .success(folders)? = opened.withLock({ $0 }) else { return }
        try? FileSystem.remove(name, in: folders.partial)
    }

    /// `files/` and `files/.partial`, opened at the first call; a failure is kept too.
    private func openFolders() throws(Failure) -> Opened {
        try opened.withLock { opened in
            if let opened { return opened }
            let result = Result { () throws(Failure) in try Self.openFolders(in: output) }
            opened = result
            return result
        }.get()
    }

    private static func openFolders(in output: String) throws(Failure) -> Opened {
        let root: Int32
        do throws(FileError) {
            root = try FileSystem.openFolder(output)
        } catch {
            throw failure(FileNaming.folder, OutputFolder.Refusal(isLink: false, code: error.code))
        }
        defer { try? FileSystem.close(root) }
        let files = try folder(FileNaming.folder, in: root, shown: FileNaming.folder)
        do throws(Failure) {
            return Opened(files: files, partial: try folder(FileNaming.partialName, in: files, shown: FileNaming.partialFolder))
        } catch {
            try? FileSystem.close(files)
            throw error
        }
    }

    /// The bucket folder of `relative` (`files/ab`), open: opened (made if missing) the first
    /// time, and kept. With `current`, the folder its name leads to now: when that is no
    /// longer the one kept (removed, or moved away and maybe a link put in its place), it is
    /// opened afresh, as the first time.
    private func bucket(of relative: String, in files: Int32, current: Bool = false) throws(Failure) -> Int32 {
        let shown = relative[..<(relative.utf8.lastIndex(of: UInt8(ascii: "/")) ?? relative.endIndex)]
        let name = shown.dropFirst(FileNaming.folder.count + 1)
        let known = buckets.withLock { $0.open[name] }
        if let known, !current || Self.names(known, String(name), in: files) { return known.descriptor }
        let opened = try Self.folder(String(name), in: files, shown: String(shown))
        guard let info = FileStatus(descriptor: opened) else {
            let failure = FileError.last
            try? FileSystem.close(opened)
            throw Failure(reason: "cannot open the files folder: '\(shown)': \(failure.reason)")
        }
        let fresh = Bucket(descriptor: opened, device: info.device, inode: info.inode)
        let (kept, spare) = buckets.withLock { buckets -> (Int32, Int32?) in
            // Another download may have opened it meanwhile: the first one stands.
            if let now = buckets.open[name], now.descriptor != known?.descriptor { return (now.descriptor, opened) }
            if let known { buckets.replaced.append(known.descriptor) }
            buckets.open[name] = fresh
            return (opened, nil)
        }
        if let spare { try? FileSystem.close(spare) }
        return kept
    }

    /// Whether `name` in `files` is the folder `bucket` is, not followed if a link.
    private static func names(_ bucket: Bucket, _ name: String, in files: Int32) -> Bool {
        guard let info = FileStatus(entry: name, in: files) else { return false }
        return info.device == bucket.device && info.inode == bucket.inode
    }

    private static func folder(_ name: String, in parent: Int32, shown: String) throws(Failure) -> Int32 {
        do throws(OutputFolder.Refusal) {
            return try OutputFolder.openFolder(name, in: parent, create: true)
        } catch {
            throw failure(shown, error)
        }
    }

    private static func failure(_ shown: String, _ refusal: OutputFolder.Refusal) -> Failure {
        Failure(reason: refusal.isLink ? refusal.reason(shown) : "cannot create the files folder: \(refusal.reason(shown))")
    }
}
