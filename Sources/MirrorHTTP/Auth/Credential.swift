package import Foundation
package import MirrorModel
package import NIOHTTP1

/// What one request carries to say who sends it: a header, a query parameter or a cookie
/// holding a token or key, or a signature made for the request as it goes on the wire.
/// It is put on each hop of a request while the hop stays on the request's own origin,
/// and on no other (see `Redirects`). Printed, it shows its auth's name only.
package struct Credential: Sendable, CustomStringConvertible {
    package enum Form: Sendable {
        case header(name: String, value: String)
        case query(name: String, value: String)
        case cookie(name: String, value: String)
        case signature(SigV4Signer)
    }

    package let form: Form
    /// The auth definition's name, for messages.
    package let auth: String
    /// Which token of its keeper it carries: a 401 on a token already replaced fetches none.
    package let generation: Int

    package init(_ form: Form, auth: String, generation: Int = 0) {
        self.form = form
        self.auth = auth
        self.generation = generation
    }

    /// The token or key placed as `placement` says.
    package init(token: String, placement: AuthSpec.Placement, auth: String, generation: Int) {
        switch placement {
        case let .header(name, prefix): form = .header(name: name, value: prefix + token)
        case let .query(name): form = .query(name: name, value: token)
        case let .cookie(name): form = .cookie(name: name, value: token)
        }
        self.auth = auth
        self.generation = generation
    }

    package var description: String { "credential of auth '\(auth)'" }

    /// Puts the credential on one hop about to be sent: `url` and `headers` are the hop's
    /// as they go on the wire (a signature covers them, so it is made last).
    package func apply(method: String, url: inout String, headers: inout HTTPHeaders, body: [UInt8]?, now: Date = Date()) {
        switch form {
        case let .header(name, value):
            headers.replaceOrAdd(name: name, value: value)
        case let .query(name, value):
            let pair = name.addingPercentEncodingForQuery() + "=" + value.addingPercentEncodingForQuery()
            if let hash = url.firstIndex(of: "#") { url = String(url[..<hash]) }
            url += (url.contains("?") ? (url.hasSuffix("?") || url.hasSuffix("&") ? "" : "&") : "?") + pair
        case let .cookie(name, value):
            let pair = "\(name)=\(value)"
            if let cookie = headers.first(name: "cookie") {
                headers.replaceOrAdd(name: "Cookie", value: cookie + "; " + pair)
            } else {
                headers.add(name: "Cookie", value: pair)
            }
        case let .signature(signer):
            // What the signature covers: the body's type and AWS's own headers (the host is
            // the URL's). Headers a proxy may change (User-Agent, Accept-Encoding) are left out.
            let given = headers.filter { header in
                let name = header.name.lowercased()
                return name == "content-type" || name.hasPrefix("x-amz-")
            }.map { (name: $0.name, value: $0.value) }
            for (name, value) in signer.sign(method: method, url: url, headers: given, body: body, date: now) {
                headers.replaceOrAdd(name: name, value: value)
            }
        }
    }
}
