import Foundation
import MirrorModel

/// A redirect that is not followed.
struct RedirectFailure: Error {
    package let reason: String
}

/// The chain of requests one request becomes as its redirects are followed, as mirror
/// follows them: at most 10; a hop to another origin (scheme, host and port; http to
/// https on the same host counts as the same) takes no header that holds a secret, and a
/// body or a URL that holds one is not sent there at all; 303, and 301 or 302 after a POST, go on
/// as a GET without a body, as browsers do. A request that is itself a credential (a token
/// request, a login) goes to no other origin at all: what it carries is the credential.
struct Redirects {
    package static let limit = 10

    /// The request to send next.
    package private(set) var url: String
    package private(set) var method: String
    package private(set) var headers: [Header]
    package private(set) var body: [UInt8]?
    /// Put on every hop on the request's own origin, and on none after it leaves it.
    package private(set) var credential: Credential?
    private let redactor: Redactor
    private let ownOriginOnly: Bool
    private var visited: Set<String>

    package init(_ request: HTTPRequest) {
        url = request.url.real
        method = request.method
        headers = request.headers
        body = request.body
        credential = request.credential
        redactor = request.redactor
        ownOriginOnly = request.ownOriginOnly
        visited = [url]
    }

    /// Whether an answer is a redirect to follow (its body is then not wanted).
    static func isRedirect(status: Int, location: String?) -> Bool {
        [301, 302, 303, 307, 308].contains(status) && location != nil
    }

    /// Moves on to where a redirect answer points.
    package mutating func follow(status: Int, location: String) throws(RedirectFailure) {
        guard let next = URL(string: location, relativeTo: URL(string: url))?.absoluteURL.absoluteString,
              HTTPClient.isHTTP(next) else {
            throw RedirectFailure(reason: "HTTP \(status) redirect to a location that is not an http(s) URL")
        }
        guard visited.insert(next).inserted else { throw RedirectFailure(reason: "redirect loop") }
        if status == 303 || (status == 301 || status == 302) && method == "POST" {
            method = "GET"
            body = nil
        }
        if !HTTPClient.sameOrigin(url, next) {
            if ownOriginOnly {
                let origin = redactor.redact(Origin(next)?.description ?? next).cutForMessage(limit: 200)
                throw RedirectFailure(reason: "HTTP \(status) redirect to \(origin), another origin: not followed, since the "
                                          + "request's credentials go to its own origin only (set the URL to the new origin if it is to be trusted)")
            }
            if redactor.holdsSecret(next) {
                throw RedirectFailure(reason: "HTTP \(status) redirect to another host with a secret in its URL: not followed")
            }
            headers = headers.filter { !$0.value.holdsSecret }
            credential = nil
            if let sent = body, redactor.holdsSecret(String(decoding: sent, as: UTF8.self)) {
                throw RedirectFailure(reason: "HTTP \(status) redirect to another host: a body holding a secret is not sent there")
            }
        }
        url = next
    }

    /// The error once `limit` redirects have been followed and another comes.
    static var tooMany: RedirectFailure { RedirectFailure(reason: "more than \(limit) redirects") }
}
