package import Foundation
package import MirrorHTTP
package import MirrorModel

/// Why one response fails the walk: nothing of it is stored. It stays typed as far as the
/// walk's state, which says it as a `PageFailure` inside a `JobFailure`: a failure of the
/// HTTP floor is its `HTTPError` until then.
package struct PageFault: Error, Sendable {
    package enum Cause: Sendable {
        /// No usable response came (after the retries the job allows).
        case http(HTTPError)
        /// What the page reader, the fetcher's rules or the store found wrong with the response.
        case page(String)
    }

    package let url: RedactedURL
    package let status: Int?
    package let cause: Cause
    /// No credential could be had: the request was never sent.
    package let notSent: Bool
    /// ` after 3 retries`, when the request was retried.
    package var afterRetries = ""

    package init(url: RedactedURL, status: Int? = nil, problem: String) {
        self.url = url
        self.status = status
        cause = .page(problem)
        notSent = false
    }

    package init(url: RedactedURL, _ error: HTTPError) {
        self.url = url
        status = error.status
        cause = .http(error)
        notSent = error.notSent
    }

    /// When the request may be sent, when the API asked for a longer wait than the job
    /// allows (`max_wait`): the walk is deferred, not failed.
    package var resumeAfter: Date? {
        if case let .http(error) = cause { error.resumeAfter } else { nil }
    }

    /// What went wrong, in the words of the floor that found it.
    package var problem: String {
        switch cause {
        case let .http(error): error.reason + afterRetries
        case let .page(text): text + afterRetries
        }
    }
}

/// What a request for a page came to.
package enum Fetched: Sendable {
    /// A status listed in `stop.status`.
    case stopStatus(Int)
    case page(ServedPage)
}

/// A request's final result, and the retries it took.
package struct FetchOutcome: Sendable {
    package var result: Result<Fetched, PageFault>
    package var retries: Int

    package init(result: Result<Fetched, PageFault>, retries: Int) {
        self.result = result
        self.retries = retries
    }
}
