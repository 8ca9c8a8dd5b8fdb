import Foundation
import MirrorHTTP
import MirrorModel

extension S3Client {
    /// What `download` wrote.
    package struct Downloaded: Sendable, Equatable {
        package let size: Int
        /// SHA-256 of the bytes written, lowercase hex.
        package let sha256: String

        package init(size: Int, sha256: String) {
            self.size = size
            self.sha256 = sha256
        }
    }

    /// Streams the object at `key` into a new file at `path`, hashing it on the way, so an
    /// object of any size is never held in memory; nil, and no file, when there is none. A
    /// network error, a timeout or a retryable status starts the file again from its first
    /// byte. A failed download removes what it wrote.
    package func download(_ key: String, toFileAt path: String) async throws(S3Error) -> Downloaded? {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw .file("GET", bucket: configuration.bucket, key: key,
                        "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        var kept = false
        defer {
            close(descriptor)
            if !kept { unlink(path) }
        }
        let signing = try await keys.signing()
        let redactor = signing.redactor
        let url = RedactedURL(real: configuration.url(key: key), redactor: redactor)
        let request = HTTPRequest(method: "GET", url: url, headers: [], body: nil, timeout: configuration.timeout,
                                  maxBytes: Int.max, redactor: redactor, auth: signing.auth)
        let watchdog = DownloadWatchdog(idle: .seconds(Int64(configuration.timeout)), minRate: 0, clock: http.clock)
        let http = http
        let outcome = await withTaskGroup(of: Void.self) { group in
            group.addTask { await watchdog.run() }
            defer { group.cancelAll() }
            return await sender.send(
                url,
                retryable: { (download: HTTPClient.Download) in
                    RetryPolicy.isRetryable(status: download.status)
                        ? RetryingSender.Retryable(status: download.status, retryAfter: download.headers["retry-after"]) : nil
                },
                answer: { ($0.status, $0.headers) },
                exchange: { () async throws(HTTPError) -> HTTPClient.Download in
                    // A retry writes the object again from its start.
                    guard ftruncate(descriptor, 0) == 0, lseek(descriptor, 0, SEEK_SET) == 0 else {
                        throw HTTPError.writeFailed(url, "\(path): \(String(cString: strerror(errno)))", status: nil)
                    }
                    return try await http.download(request, to: descriptor, watchdog: watchdog)
                })
        }
        let download: HTTPClient.Download
        switch outcome.result {
        case let .failure(error):
            throw .transport("GET", bucket: configuration.bucket, key: key, error, retries: outcome.retries)
        case let .success(answer):
            download = answer
        }
        if download.status == 404 { return nil }
        guard (200...299).contains(download.status) else {
            throw .answered("GET", bucket: configuration.bucket, key: key, status: download.status, body: [],
                            retries: outcome.retries, redactor: redactor)
        }
        guard fsync(descriptor) == 0 else {
            throw .file("GET", bucket: configuration.bucket, key: key,
                        "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        kept = true
        return Downloaded(size: download.size, sha256: download.sha256)
    }
}
