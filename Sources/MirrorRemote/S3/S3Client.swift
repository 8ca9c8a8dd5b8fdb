import Foundation
package import Logging
package import MirrorHTTP
import MirrorModel

/// Speaks S3's REST API to one bucket: objects got, looked at, written (also only if absent
/// or only if unchanged, for leases), deleted and listed, and files uploaded in parts. Every
/// request is signed with SigV4 (service `s3`, the payload's SHA-256 in
/// `x-amz-content-sha256`) and sent through `HTTPClient`; a network error, a timeout, a 5xx,
/// 408 or 429 is retried as a page is (`RetryingSender`, `RetryPolicy`), any other refusal is
/// not. Keys are whole object keys (`S3Configuration.key` puts one under the prefix).
///
/// A conditional write that is retried after its answer was lost may find its own earlier
/// write and fail with `.preconditionFailed`: a lease reads the object back to tell.
package struct S3Client: Sendable {
    /// What `get` answers: the object's bytes and its ETag.
    package struct Object: Sendable, Equatable {
        package let body: [UInt8]
        /// As S3 sends it, quotes included: `"9b2cf535f27731c974343645a3985328"`.
        package let etag: String
    }

    /// What `head` answers.
    package struct Metadata: Sendable, Equatable {
        package let etag: String
        package let size: Int
    }

    /// When a write goes ahead.
    package enum Condition: Sendable, Equatable {
        /// Only if the key holds no object (`If-None-Match: *`).
        case ifNoneMatch
        /// Only if the key's object has this ETag (`If-Match`).
        case ifMatch(String)
    }

    package let configuration: S3Configuration
    let http: HTTPClient
    let sender: RetryingSender
    /// The keys requests are signed with.
    let keys: S3Keys

    package init(_ configuration: S3Configuration, http: HTTPClient = HTTPClient(), logger: Logger,
                 policy: RetryPolicy = RetryPolicy()) {
        self.configuration = configuration
        self.http = http
        sender = RetryingSender(job: "s3://\(configuration.bucket)", retries: configuration.retries, rateLimit: nil,
                                limiter: RateLimiter(), policy: policy, logger: logger, clock: http.clock)
        keys = S3Keys(configuration: configuration, http: http, sender: sender)
    }

    /// The object at `key` and its ETag; nil when there is none (404 NoSuchKey). Read
    /// whole: an object over `maxBytes` fails.
    package func get(_ key: String, maxBytes: Int = 256 << 20) async throws(S3Error) -> Object? {
        let response = try await exchange("GET", key: key, maxBytes: maxBytes, absent: true)
        guard let response else { return nil }
        return Object(body: response.takeBody(), etag: try etag(of: response, "GET", key: key))
    }

    /// The ETag and size of the object at `key`; nil when there is none. A HEAD's answer has
    /// no body, so a missing bucket reads as a missing key here (`get` tells them apart).
    package func head(_ key: String) async throws(S3Error) -> Metadata? {
        guard let response = try await exchange("HEAD", key: key, absent: true) else { return nil }
        guard let size = response.headers["content-length"].flatMap(Int.init) else {
            throw .malformed("HEAD", bucket: configuration.bucket, key: key, status: response.status, "no Content-Length")
        }
        return Metadata(etag: try etag(of: response, "HEAD", key: key), size: size)
    }

    /// Writes `body` at `key`, if `condition` holds; returns the new object's ETag. A
    /// condition that does not hold fails with `.preconditionFailed`.
    @discardableResult
    package func put(_ key: String, _ body: [UInt8], condition: Condition? = nil) async throws(S3Error) -> String {
        let response = try await exchange("PUT", key: key, headers: Self.headers(condition) + [
            ("content-type", "application/octet-stream"),
        ], body: body)
        return try etag(of: response!, "PUT", key: key)
    }

    /// Deletes the object at `key`; one that is not there is no error.
    package func delete(_ key: String) async throws(S3Error) {
        _ = try await exchange("DELETE", key: key)
    }

    /// Deletes the object at `key` only if its ETag is `etag` (`If-Match`), else fails with
    /// `.preconditionFailed`; one that is not there is no error.
    package func delete(_ key: String, ifMatch etag: String) async throws(S3Error) {
        _ = try await exchange("DELETE", key: key, headers: Self.headers(.ifMatch(etag)), absent: true)
    }

    // MARK: Listing

    /// One object of a listing.
    package struct Listed: Sendable, Equatable {
        package let key: String
        package let etag: String
        package let size: Int
        /// `2026-11-27T07:49:03.000Z`, as S3 wrote it.
        package let lastModified: String
    }

    /// One page of a listing, and the token of the next when there is one.
    package struct ListPage: Sendable, Equatable {
        package let objects: [Listed]
        package let continuation: String?
    }

    /// Every object whose key starts with `prefix`, in key order, every page walked.
    package func list(prefix: String, pageSize: Int? = nil) async throws(S3Error) -> [Listed] {
        var objects: [Listed] = []
        var continuation: String?
        repeat {
            let page = try await list(prefix: prefix, continuation: continuation, pageSize: pageSize)
            objects += page.objects
            continuation = page.continuation
        } while continuation != nil
        return objects
    }

    /// One page of ListObjectsV2: up to `pageSize` objects (S3's default and most: 1,000)
    /// whose key starts with `prefix`, after `continuation`.
    package func list(prefix: String, continuation: String?, pageSize: Int? = nil) async throws(S3Error) -> ListPage {
        var query = [("list-type", "2"), ("prefix", prefix)]
        if let continuation { query.append(("continuation-token", continuation)) }
        if let pageSize { query.append(("max-keys", String(pageSize))) }
        let response = try await exchange("GET", key: nil, query: query)!
        let document = S3XML(response.body)
        func malformed(_ what: String) -> S3Error {
            .malformed("GET", bucket: configuration.bucket, key: prefix, status: response.status, what)
        }
        guard document.blocks("ListBucketResult").count == 1 else {
            throw malformed("not a ListObjectsV2 answer")
        }
        var objects: [Listed] = []
        for block in document.blocks("Contents") {
            guard let key = block.text("Key"), let size = block.text("Size").flatMap(Int.init) else {
                throw malformed("an object without its key or size in the listing")
            }
            objects.append(Listed(key: key, etag: block.text("ETag") ?? "", size: size,
                                  lastModified: block.text("LastModified") ?? ""))
        }
        guard document.text("IsTruncated") == "true" else { return ListPage(objects: objects, continuation: nil) }
        guard let next = document.text("NextContinuationToken"), !next.isEmpty, next != continuation else {
            throw malformed("a truncated listing without a new continuation token")
        }
        return ListPage(objects: objects, continuation: next)
    }

    // MARK: Exchanges

    /// The headers of `condition`.
    static func headers(_ condition: Condition?) -> [(String, String)] {
        switch condition {
        case nil: []
        case .ifNoneMatch: [("if-none-match", "*")]
        case let .ifMatch(etag): [("if-match", etag)]
        }
    }

    /// The ETag header of a response.
    func etag(of response: HTTPResponse, _ method: String, key: String) throws(S3Error) -> String {
        guard let etag = response.headers["etag"], !etag.isEmpty else {
            throw .malformed(method, bucket: configuration.bucket, key: key, status: response.status, "no ETag")
        }
        return etag
    }

    /// Sends `request` as S3's and STS's requests go: a network error, a timeout, a 5xx, 408
    /// or 429 retried (after the server's `Retry-After`, if it says one).
    static func send(_ request: HTTPRequest, http: HTTPClient, sender: RetryingSender) async -> RetryingSender.Outcome<HTTPResponse> {
        await sender.send(
            request.url,
            method: request.method,
            retryable: { response in
                RetryPolicy.isRetryable(status: response.status)
                    ? RetryingSender.Retryable(status: response.status, retryAfter: response.headers["retry-after"]) : nil
            },
            answer: { ($0.status, $0.headers) },
            exchange: { () async throws(HTTPError) -> HTTPResponse in try await http.send(request) })
    }

    /// Sends one request to `key` (or the bucket) with retries, and returns the 2xx answer;
    /// nil for a 404 when `absent` (one with an error body says which: only `NoSuchKey`).
    /// Any other answer fails with S3's error.
    func exchange(_ method: String, key: String?, query: [(String, String)] = [], headers: [(String, String)] = [],
                  body: [UInt8]? = nil, maxBytes: Int = 16 << 20, absent: Bool = false) async throws(S3Error) -> HTTPResponse? {
        var url = configuration.url(key: key)
        if !query.isEmpty {
            url += "?" + query.map { SigV4Signer.encoded($0.0) + "=" + SigV4Signer.encoded($0.1) }.joined(separator: "&")
        }
        let signing = try await keys.signing()
        let redactor = signing.redactor
        let shown = RedactedURL(real: url, redactor: redactor)
        let request = HTTPRequest(
            method: method, url: shown,
            headers: headers.map { Header(name: $0.0, value: RedactedText(real: $0.1, redactor: redactor)) },
            body: body, timeout: configuration.timeout, maxBytes: maxBytes, redactor: redactor, auth: signing.auth)
        let outcome = await Self.send(request, http: http, sender: sender)
        let response: HTTPResponse
        switch outcome.result {
        case let .failure(error):
            throw .transport(method, bucket: configuration.bucket, key: key, error, retries: outcome.retries)
        case let .success(answer):
            response = answer
        }
        if (200...299).contains(response.status) { return response }
        if absent, response.status == 404 {
            let code = S3XML(response.body).text("Code")
            if code == nil || code == "NoSuchKey" { return nil }
        }
        throw .answered(method, bucket: configuration.bucket, key: key, status: response.status, body: response.body,
                        retries: outcome.retries, redactor: redactor)
    }
}
