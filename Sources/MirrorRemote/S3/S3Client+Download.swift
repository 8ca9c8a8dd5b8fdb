import Foundation
import MirrorFiles
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
        let descriptor: Int32
        do throws(FileError) {
            descriptor = try FileSystem.createOrEmpty(path, followingLinks: false, mode: 0o600)
        } catch {
            throw .file("GET", bucket: configuration.bucket, key: key, "cannot write \(path): \(error.reason)")
        }
        var kept = false
        defer {
            try? FileSystem.close(descriptor)
            if !kept { try? FileSystem.remove(path) }
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
                    do throws(FileError) {
                        try FileSystem.truncate(descriptor, to: 0)
                        try FileSystem.rewind(descriptor)
                    } catch {
                        throw HTTPError.writeFailed(url, "\(path): \(error.reason)", status: nil)
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
        do throws(FileError) {
            try FileSystem.flush(descriptor)
        } catch {
            throw .file("GET", bucket: configuration.bucket, key: key, "cannot write \(path): \(error.reason)")
        }
        kept = true
        return Downloaded(size: download.size, sha256: download.sha256)
    }
}
