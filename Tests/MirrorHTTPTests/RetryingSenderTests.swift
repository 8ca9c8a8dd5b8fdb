import AsyncHTTPClient
import Foundation
import InMemoryLogging
import Logging
@testable import MirrorHTTP
@testable import MirrorModel
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

private let url = RedactedURL(real: "http://127.0.0.1:9/items?key=s3cr3t", redactor: Redactor(secrets: [.init(name: "KEY", value: "s3cr3t")]))

@Suite("HTTP errors and the retrying sender", .timeLimit(.minutes(6)))
struct RetryingSenderTests {
    /// A sender with a fast backoff that logs into `log`.
    func sender(retries: Int = 2, rateLimit: RateLimit? = nil, limiter: RateLimiter = RateLimiter(),
                log: InMemoryLogHandler = InMemoryLogHandler()) -> RetryingSender {
        RetryingSender(job: "items", retries: retries, rateLimit: rateLimit, limiter: limiter,
                       policy: RetryPolicy(baseDelay: 0.001), logger: Logger(label: "t", factory: { _ in log }))
    }

    @Test("errors are classified by their type; the reason is a fixed phrase that quotes nothing")
    func classification() {
        struct Quoting: Error, CustomStringConvertible { var description: String { "GET http://h/?key=s3cr3t refused" } }
        let cases: [(any Error, Int?, String, HTTPError.Kind)] = [
            (IOError(errnoCode: ECONNREFUSED, reason: "connect"), nil, "connection refused", .transient),
            (IOError(errnoCode: ECONNRESET, reason: "read"), nil, "connection reset", .transient),
            (IOError(errnoCode: ECONNRESET, reason: "read"), 200, "body cut short: connection closed early", .transient),
            (IOError(errnoCode: EHOSTUNREACH, reason: "connect"), nil, "cannot connect (host unreachable)", .transient),
            (ChannelError.connectTimeout(.seconds(1)), nil, "connect timed out", .transient),
            (ChannelError.eof, nil, "connection closed without a response", .transient),
            (HTTPClientError.readTimeout, 200, "timed out", .transient),
            (HTTPClientError.remoteConnectionClosed, 200, "body cut short: connection closed early", .transient),
            (HTTPClientError.invalidURL, nil, "not a valid http(s) URL", .invalid),
            (HTTPParserError.invalidEOFState, nil, "connection closed without a response", .transient),
            (HTTPParserError.invalidStatus, nil, "malformed HTTP response", .transient),
            (CancellationError(), nil, "cancelled", .cancelled),
            (Quoting(), nil, "network error (Quoting)", .transient),
        ]
        for (error, status, reason, kind) in cases {
            let classified = HTTPError.classify(error, url: url, status: status)
            #expect(classified.reason == reason)
            #expect(classified.kind == kind)
            #expect(classified.status == status)
            #expect(!"\(classified)".contains("s3cr3t") && classified.url.description.contains("REDACTED"))
        }
    }

    @Test("a transient error is retried until the retries run out; each retry line names its cause")
    func retriesTransient() async {
        let log = InMemoryLogHandler()
        let calls = Atomic<Int>(0)
        let outcome = await sender(retries: 2, log: log).send(url, retryable: { (_: Int) in nil }) { () throws(HTTPError) -> Int in
            calls.add(1, ordering: .relaxed)
            throw HTTPError.classify(IOError(errnoCode: ECONNREFUSED, reason: "connect"), url: url, status: nil)
        }
        #expect(calls.load(ordering: .relaxed) == 3)
        #expect(outcome.retries == 2)
        #expect(outcome.afterRetries == " (after 2 retries)")
        #expect(log.entries.map { "\($0.level) \($0.message) \($0.metadata["cause"] ?? "") \($0.metadata["url"] ?? "")" } == [
            "warning retrying connection refused http://127.0.0.1:9/items?key=REDACTED",
            "warning retrying connection refused http://127.0.0.1:9/items?key=REDACTED",
        ])
    }

    @Test("a flagged answer is asked again; a final one ends the exchange; an invalid request is not retried")
    func retriesAnswers() async throws {
        let log = InMemoryLogHandler()
        let statuses = Mutex([503, 429, 200, 503])
        let outcome = await sender(retries: 4, log: log).send(url, retryable: { status in
            RetryPolicy.isRetryable(status: status) ? RetryingSender.Retryable(status: status, retryAfter: "0") : nil
        }) { () throws(HTTPError) -> Int in
            statuses.withLock { $0.removeFirst() }
        }
        #expect(try outcome.result.get() == 200)
        #expect(outcome.retries == 2)
        #expect(log.entries.map { "\($0.metadata["cause"] ?? "") \($0.metadata["http.status"] ?? "")" } == ["HTTP 503 503", "HTTP 429 429"])

        let calls = Atomic<Int>(0)
        let invalid = await sender(retries: 4).send(url, retryable: { (_: Int) in nil }) { () throws(HTTPError) -> Int in
            calls.add(1, ordering: .relaxed)
            throw HTTPError.invalidURL(url)
        }
        #expect(calls.load(ordering: .relaxed) == 1)
        #expect(invalid.retries == 0)
    }

    @Test("a cancelled task sends nothing: not while it waits for its rate-limit slot, not a retry")
    func cancelled() async {
        let limiter = RateLimiter()
        // The hour's one slot is taken: the next request would wait an hour.
        _ = try? await limiter.acquire(host: url.host, limit: RateLimit("1/h")!)
        let calls = Atomic<Int>(0)
        let sender = sender(rateLimit: RateLimit("1/h")!, limiter: limiter)
        let task = Task {
            await sender.send(url, retryable: { (_: Int) in nil }) { () throws(HTTPError) -> Int in
                calls.add(1, ordering: .relaxed)
                return 200
            }
        }
        task.cancel()
        let outcome = await task.value
        #expect(calls.load(ordering: .relaxed) == 0)
        #expect(outcome.result.failureReason == "cancelled")

        // Cancelled during the backoff before a retry: that retry is never made.
        let retried = Atomic<Int>(0)
        let slow = RetryingSender(job: "items", retries: 3, rateLimit: nil, limiter: RateLimiter(),
                                  policy: RetryPolicy(baseDelay: 3600, maxDelay: 3600),
                                  logger: Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }))
        let second = Task {
            await slow.send(url, retryable: { (_: Int) in nil }) { () throws(HTTPError) -> Int in
                retried.add(1, ordering: .relaxed)
                withUnsafeCurrentTask { $0?.cancel() }
                throw HTTPError.timedOut(url, status: nil)
            }
        }
        let ended = await second.value
        #expect(retried.load(ordering: .relaxed) == 1)
        #expect(ended.retries == 0)
        #expect(ended.result.failureReason == "timed out")
    }
}

private extension Result where Failure == HTTPError {
    var failureReason: String? {
        if case let .failure(error) = self { return error.reason }
        return nil
    }
}
