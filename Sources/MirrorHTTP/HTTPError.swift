import AsyncHTTPClient
package import Foundation
import MirrorFiles
package import MirrorModel
import NIOCore
import NIOPosix
import NIOHTTP1
import NIOSSL

/// A request that got no complete HTTP response. What went wrong is a private code,
/// worked out from the error types of the client library and SwiftNIO (never from their
/// text), so its description is a fixed phrase that never quotes a URL, a header or a body.
package struct HTTPError: Error, Sendable, CustomStringConvertible {
    package enum Kind: Sendable {
        /// Worth another attempt: refused, reset, timed out, cut short.
        case transient
        /// The body passed the size cap; asking again would not help.
        case tooLarge
        /// The request cannot be made at all (bad URL, unsupported scheme), or its result
        /// cannot be kept (a local write failed).
        case invalid
        /// The request is no longer wanted: nothing more is sent.
        case cancelled
        /// The API asked for a longer wait than the job allows (`max_wait`, `--max-time`):
        /// the request is put off until `resumeAfter`.
        case deferred
    }

    /// Why a request was deferred.
    package enum Deferral: Sendable, Equatable {
        /// The host's quota is spent until it renews.
        case quota
        /// The host answered `Retry-After`.
        case retryAfter
    }

    /// What a deferral waited on and why it did not: the wait, the job's `max_wait`, and
    /// whether the wait would have outlasted `--max-time` instead.
    private struct Wait: Sendable, Equatable {
        let cause: Deferral
        let seconds: Double
        let maxWait: Double
        let pastDeadline: Bool
        let until: Date
    }

    private enum Code: Sendable, Equatable {
        case connectionRefused
        case connectionReset
        case hostNotFound
        case unreachable
        case connectTimeout
        case timedOut
        case tooSlow(bytes: Int, seconds: Int, rate: Int)
        case closedEarly
        case closedWithoutResponse
        case malformed(String)
        case tls
        case tooLarge(cap: Int, what: String)
        case invalidRequest(String)
        case redirect(String)
        case writeFailed(String)
        case cancelled
        case network(String)
        /// The API refused a fresh credential: said in the auth definition's words.
        case auth(String, transient: Bool)
        /// No credential could be had (a token endpoint, a login, a token store failed), so
        /// the request was not sent: said in the auth definition's words.
        case noCredential(String, transient: Bool)
        case deferred(Wait)
    }

    private let code: Code
    /// The request's URL, redacted.
    package let url: RedactedURL
    /// The status line, when one arrived before the failure.
    package let status: Int?

    private init(_ code: Code, url: RedactedURL, status: Int?) {
        self.code = code
        self.url = url
        self.status = status
    }

    package var kind: Kind {
        switch code {
        case .tooLarge: return .tooLarge
        case .invalidRequest, .redirect, .writeFailed: return .invalid
        case .cancelled: return .cancelled
        case let .auth(_, transient), let .noCredential(_, transient): return transient ? .transient : .invalid
        case .deferred: return .deferred
        default: return .transient
        }
    }

    /// A short reason, without the URL (messages print the redacted one beside it).
    package var reason: String {
        switch code {
        case .connectionRefused: return "connection refused"
        case .connectionReset: return "connection reset"
        case .hostNotFound: return "cannot connect (host not found)"
        case .unreachable: return "cannot connect (host unreachable)"
        case .connectTimeout: return "connect timed out"
        case .timedOut: return "timed out"
        case let .tooSlow(bytes, seconds, rate):
            return "too slow: \(ByteSize.approximate(bytes)) in \(seconds)s, under the \(ByteSize.text(rate))/s of min_download_rate"
        case .closedEarly: return "body cut short: connection closed early"
        case .closedWithoutResponse: return "connection closed without a response"
        case let .malformed(what): return what
        case .tls: return "TLS handshake failed"
        case let .tooLarge(cap, what): return "\(what) over the \(ByteSize.text(cap)) cap"
        case let .invalidRequest(what): return what
        case let .redirect(what): return what
        case let .writeFailed(why): return "cannot write the file: \(why)"
        case .cancelled: return "cancelled"
        case let .network(what): return "network error (\(what))"
        case let .auth(what, _), let .noCredential(what, _): return what
        case let .deferred(wait):
            let asked = switch wait.cause {
            case .quota: "the host's request quota is spent until it renews in \(WaitText.of(wait.seconds))"
            case .retryAfter: "Retry-After asks to wait \(WaitText.of(wait.seconds))"
            }
            return asked + (wait.pastDeadline && wait.seconds <= wait.maxWait
                ? ", which would outlast --max-time" : ", longer than max_wait \(WaitText.of(wait.maxWait))")
        }
    }

    /// When a deferred request may be sent; nil for any other error.
    package var resumeAfter: Date? {
        if case let .deferred(wait) = code { wait.until } else { nil }
    }

    package var description: String { reason }

    // MARK: Made by the client

    static func tooLarge(_ url: RedactedURL, cap: Int, what: String, status: Int?) -> HTTPError {
        HTTPError(.tooLarge(cap: cap, what: what), url: url, status: status)
    }

    package static func timedOut(_ url: RedactedURL, status: Int?) -> HTTPError { HTTPError(.timedOut, url: url, status: status) }

    static func tooSlow(_ url: RedactedURL, bytes: Int, seconds: Int, rate: Int, status: Int?) -> HTTPError {
        HTTPError(.tooSlow(bytes: bytes, seconds: seconds, rate: rate), url: url, status: status)
    }

    package static func cancelled(_ url: RedactedURL) -> HTTPError { HTTPError(.cancelled, url: url, status: nil) }

    /// The request to `url` is put off: waiting `seconds` (until `until`) for `cause` is longer
    /// than `maxWait`, or would outlast the run. `status`: the answer that asked for the wait, if one did.
    package static func deferred(_ url: RedactedURL, cause: Deferral, seconds: Double, maxWait: Double, pastDeadline: Bool,
                                 until: Date, status: Int?) -> HTTPError {
        HTTPError(.deferred(Wait(cause: cause, seconds: seconds, maxWait: maxWait, pastDeadline: pastDeadline, until: until)),
                  url: url, status: status)
    }

    static func invalidURL(_ url: RedactedURL) -> HTTPError {
        HTTPError(.invalidRequest("not a valid http(s) URL"), url: url, status: nil)
    }

    static func redirect(_ url: RedactedURL, _ why: String, status: Int?) -> HTTPError {
        HTTPError(.redirect(why), url: url, status: status)
    }

    /// No credential could be had for the request to `url`: it was not sent, and the
    /// status (if any) was the token endpoint's, said in `failure`'s words, not the request's.
    package static func auth(_ url: RedactedURL, _ failure: AuthFailure) -> HTTPError {
        HTTPError(.noCredential(failure.reason, transient: failure.transient), url: url, status: nil)
    }

    /// The request was not sent: no credential could be had for it.
    package var notSent: Bool {
        if case .noCredential = code { true } else { false }
    }

    /// The API refused the credential of `auth` again, right after a fresh one was fetched.
    package static func refused(_ url: RedactedURL, auth: AuthSpec) -> HTTPError {
        HTTPError(.auth("HTTP 401 again with a fresh token: the API refuses the credentials of \(auth)", transient: false),
                  url: url, status: 401)
    }

    /// The API answered 401 to `tokens` tokens in a row that had each been replaced or had
    /// ended before the answer came: the requests take longer than the tokens last.
    package static func outlived(_ url: RedactedURL, auth: AuthSpec, tokens: Int) -> HTTPError {
        HTTPError(.auth("HTTP 401 to \(tokens) tokens in a row, each replaced or ended before its answer came: "
                        + "requests take longer than the tokens of \(auth) last", transient: true),
                  url: url, status: 401)
    }

    package static func writeFailed(_ url: RedactedURL, _ why: String, status: Int?) -> HTTPError {
        HTTPError(.writeFailed(why), url: url, status: status)
    }

    /// Classifies what the client library or SwiftNIO threw. `gotHead`: the response's
    /// status line had arrived, so a closed connection cut the body short.
    package static func classify(_ error: any Error, url: RedactedURL, status: Int?) -> HTTPError {
        if let error = error as? HTTPError { return error }
        return HTTPError(code(of: error, gotHead: status != nil), url: url, status: status)
    }

    private static func code(of error: any Error, gotHead: Bool) -> Code {
        let closed: Code = gotHead ? .closedEarly : .closedWithoutResponse
        switch error {
        case is CancellationError:
            return .cancelled
        case let error as HTTPClientError:
            switch error {
            case .deadlineExceeded, .readTimeout, .writeTimeout: return .timedOut
            case .connectTimeout, .tlsHandshakeTimeout, .getConnectionFromPoolTimeout: return .connectTimeout
            case .remoteConnectionClosed, .bodyLengthMismatch: return closed
            case .cancelled: return .cancelled
            case .invalidURL, .emptyHost, .emptyScheme: return .invalidRequest("not a valid http(s) URL")
            default:
                if error.shortDescription == HTTPClientError.unsupportedScheme("").shortDescription {
                    return .invalidRequest("unsupported URL scheme")
                }
                if error.shortDescription == HTTPClientError.invalidHeaderFieldNames([]).shortDescription {
                    return .invalidRequest("invalid header name")
                }
                if error.shortDescription == HTTPClientError.invalidHeaderFieldValues([]).shortDescription {
                    return .invalidRequest("invalid header value")
                }
                // A short description is a fixed phrase of the library: it quotes nothing.
                return .network(error.shortDescription.lowercased())
            }
        case let error as NIOConnectionError:
            // Every address refused, or none resolved.
            if let first = error.connectionErrors.first { return code(of: first.error, gotHead: gotHead) }
            return .hostNotFound
        case is SocketAddressError.UnknownHost, is SocketAddressError:
            return .hostNotFound
        case let error as IOError:
            switch error.errnoCode {
            case ECONNREFUSED: return .connectionRefused
            case ECONNRESET, EPIPE: return gotHead ? .closedEarly : .connectionReset
            case ENETUNREACH, EHOSTUNREACH, ENETDOWN, EHOSTDOWN: return .unreachable
            case ETIMEDOUT: return .timedOut
            default: return .network(SystemError.text(errno: error.errnoCode))
            }
        case let error as ChannelError:
            switch error {
            case .connectTimeout: return .connectTimeout
            case .eof, .ioOnClosedChannel, .alreadyClosed, .inputClosed, .outputClosed: return closed
            case .writeHostUnreachable: return .unreachable
            default: return .network("channel error")
            }
        case let error as HTTPParserError:
            if error == .invalidEOFState { return closed }
            return .malformed(gotHead ? "malformed HTTP body" : "malformed HTTP response")
        case is NIOSSLError, is BoringSSLError, is NIOSSLExtraError:
            return .tls
        default:
            // The type's name, never the error's text (which may quote the request).
            return .network(String(describing: type(of: error)))
        }
    }
}
