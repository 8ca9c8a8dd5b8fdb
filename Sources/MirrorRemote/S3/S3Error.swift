import Foundation
import MirrorHTTP
import MirrorModel

/// An S3 request that failed: S3 refused it (its XML error's `<Code>` and `<Message>`, the
/// message redacted), no answer came (the HTTP error), or the answer could not be read.
/// It names the method, the bucket and key, and the status; never a credential, a header
/// or a body. Callers act on `kind`: a lease sees `.preconditionFailed` when another writer
/// got there first.
package struct S3Error: Error, Sendable, CustomStringConvertible {
    package enum Kind: Sendable, Equatable {
        /// A conditional write lost: 412 Precondition Failed, or 409
        /// ConditionalRequestConflict (another conditional write to the key was under way).
        case preconditionFailed
        /// Refused, and asking again would not help: a 4xx (a bad signature, no access, no bucket).
        case refused
        /// S3 answered 5xx, 408 or 429 or did not answer, through every retry.
        case unavailable
        /// An answer that is not what S3 sends.
        case malformed
        /// The task was cancelled: nothing more was sent.
        case cancelled
        /// The local file of an upload could not be read.
        case file
    }

    private enum Code: Sendable {
        case answered(code: String?, message: String?)
        case transport(HTTPError)
        case malformed(String)
        case file(String)
    }

    private let code: Code
    package let method: String
    package let bucket: String
    package let key: String?
    /// The status of the last answer, if one came.
    package let status: Int?
    /// Retries made before the last attempt.
    package let retries: Int
    /// What was asked, when it is not an object of the bucket: the STS endpoint of a web identity.
    private var place: String?

    private init(_ code: Code, method: String, bucket: String, key: String?, status: Int?, retries: Int) {
        self.code = code
        self.method = method
        self.bucket = bucket
        self.key = key
        self.status = status
        self.retries = retries
    }

    /// S3's answer of `status` with the error document `body` (may be empty, as a HEAD's is).
    static func answered(_ method: String, bucket: String, key: String?, status: Int, body: [UInt8], retries: Int,
                         redactor: Redactor) -> S3Error {
        let document = S3XML(body)
        let message = document.text("Message").map { redactor.redact($0).cutForMessage() }
        return S3Error(.answered(code: document.text("Code"), message: message), method: method, bucket: bucket, key: key,
                       status: status, retries: retries)
    }

    static func transport(_ method: String, bucket: String, key: String?, _ error: HTTPError, retries: Int) -> S3Error {
        S3Error(.transport(error), method: method, bucket: bucket, key: key, status: error.status, retries: retries)
    }

    static func malformed(_ method: String, bucket: String, key: String?, status: Int?, _ what: String) -> S3Error {
        S3Error(.malformed(what), method: method, bucket: bucket, key: key, status: status, retries: 0)
    }

    static func file(_ method: String, bucket: String, key: String?, _ why: String) -> S3Error {
        S3Error(.file(why), method: method, bucket: bucket, key: key, status: nil, retries: 0)
    }

    /// The same failure, of a request to `place` rather than to the bucket.
    func asked(of place: String) -> S3Error {
        var error = self
        error.place = place
        return error
    }

    package var kind: Kind {
        switch code {
        case let .answered(code, _):
            if status == 412 || (status == 409 && code == "ConditionalRequestConflict") { return .preconditionFailed }
            return status.map(RetryPolicy.isRetryable(status:)) == true ? .unavailable : .refused
        case let .transport(error):
            return error.kind == .cancelled ? .cancelled : .unavailable
        case .malformed:
            return .malformed
        case .file:
            return .file
        }
    }

    /// S3's error code (`NoSuchKey`, `SignatureDoesNotMatch`, `PreconditionFailed` …), when it sent one.
    package var s3Code: String? {
        if case let .answered(code, _) = code { code } else { nil }
    }

    /// `PUT s3://bucket/key: HTTP 412 PreconditionFailed: At least one of the pre-conditions you specified did not hold`.
    package var description: String {
        let target = "\(method) \(place ?? "s3://\(bucket)/\(key ?? "")")"
        let what: String
        switch code {
        case let .answered(code, message):
            what = "HTTP \(status ?? 0)" + (code.map { " " + $0 } ?? "") + (message.map { ": " + $0 } ?? "")
        case let .transport(error):
            what = (error.status.map { "HTTP \($0): " } ?? "") + error.reason
        case let .malformed(why):
            what = (status.map { "HTTP \($0): " } ?? "") + why
        case let .file(why):
            what = why
        }
        let tail = retries == 0 ? "" : " (after \(retries) \(retries == 1 ? "retry" : "retries"))"
        return "\(target): \(what)\(tail)"
    }
}
