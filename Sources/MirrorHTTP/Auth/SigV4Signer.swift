import Crypto
package import Foundation
import MirrorModel

/// Signs a request with AWS Signature Version 4, as AWS's "Create a signed AWS API request"
/// describes it, for S3 and for every other service.
///
/// What is signed: `host` (the given Host header, or the URL's authority as written, without
/// user info or a default port), every header given, and the `x-amz-*` headers the signer
/// adds — except `authorization` and the headers a proxy, a tracer or the HTTP client may
/// add, drop or change on the way (hop-by-hop headers, `expect`, `user-agent`, trace
/// context), the list botocore leaves out. The signer owns `x-amz-date` (from `date`) and, when it holds a session token,
/// `x-amz-security-token`: a given header of either name is ignored. A given
/// `x-amz-content-sha256` (such as `UNSIGNED-PAYLOAD`) is signed and used as the payload
/// hash; for service `s3` the signer otherwise adds it, holding the body's SHA-256.
///
/// The URL is taken as it goes on the wire. Its path is, for service `s3`, neither
/// normalised nor encoded again (only brought to the one encoding S3 computes: unreserved
/// characters bare, others as upper-case `%XY`); for every other service it is normalised
/// (`.` and `..` segments resolved, runs of `/` made one) and encoded once more, so that
/// `%20` on the wire reads `%2520`. Each query name and value is decoded (a `+` as a space,
/// as AWS reads it: botocore sends a space as `+` and signs it as `%20`) and encoded again
/// with the RFC 3986 unreserved set, then sorted by name, then value. Prints, dumps and reflects as its region and service only.
package struct SigV4Signer: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    package let accessKey: String
    private let secretKey: String
    private let sessionToken: String?
    package let region: String
    package let service: String

    package init(accessKey: String, secretKey: String, sessionToken: String?, region: String, service: String) {
        self.accessKey = accessKey
        self.secretKey = secretKey
        self.sessionToken = sessionToken
        self.region = region
        self.service = service
    }

    /// Every stage of one signature. Its canonical request holds the session token, if
    /// any: it prints, dumps and reflects as its signed header names only.
    package struct Signing: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        package let canonicalRequest: String
        package let stringToSign: String
        package let signedHeaders: String
        package let signature: String
        /// The headers to set on the request, replacing any of the same name.
        package let headers: [(name: String, value: String)]

        package var description: String { "SigV4Signer.Signing(signedHeaders: \(signedHeaders))" }
        package var debugDescription: String { description }
        package var customMirror: Mirror { Mirror(self, children: ["signedHeaders": signedHeaders]) }
    }

    /// Headers to add to the request as it goes on the wire (x-amz-date, x-amz-security-token
    /// when there is a session token, x-amz-content-sha256 for service "s3", authorization).
    /// `url` is the absolute URL exactly as sent; `headers` the request's other headers (Host
    /// is derived from the URL unless given).
    package func sign(
        method: String, url: String, headers: [(name: String, value: String)], body: [UInt8]?, date: Date
    ) -> [(name: String, value: String)] {
        signing(method: method, url: url, headers: headers, body: body, date: date).headers
    }

    /// `sign`, with the canonical request and the string to sign it went through.
    package func signing(
        method: String, url: String, headers: [(name: String, value: String)], body: [UInt8]?, date: Date
    ) -> Signing {
        let parts = URLParts(url)
        let amzDate = Self.amzDate(date)
        let day = String(amzDate.prefix(8))

        // The headers signed, by lower-cased name, each name's values in the order given.
        var byName: [String: [String]] = [:]
        for header in headers {
            let name = header.name.lowercased()
            guard !Self.unsigned.contains(name), name != "x-amz-date" else { continue }
            if name == "x-amz-security-token", sessionToken != nil { continue }
            byName[name, default: []].append(Self.trimmed(header.value))
        }
        if byName["host"] == nil { byName["host"] = [parts.host] }
        byName["x-amz-date"] = [amzDate]
        var added: [(name: String, value: String)] = [("x-amz-date", amzDate)]
        if let sessionToken {
            byName["x-amz-security-token"] = [Self.trimmed(sessionToken)]
            added.append(("x-amz-security-token", sessionToken))
        }
        let payloadHash: String
        if let given = byName["x-amz-content-sha256"]?.first {
            payloadHash = given
        } else {
            payloadHash = Self.hex(SHA256.hash(data: body ?? []))
            if service == "s3" {
                byName["x-amz-content-sha256"] = [payloadHash]
                added.append(("x-amz-content-sha256", payloadHash))
            }
        }

        let sorted = byName.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        let signedHeaders = sorted.map(\.key).joined(separator: ";")
        let canonicalHeaders = sorted.map { "\($0.key):\($0.value.joined(separator: ","))\n" }.joined()
        let canonicalURI = service == "s3" ? Self.encodedOnce(parts.path) : Self.encoded(Self.normalized(parts.path), keepSlash: true)
        let canonicalRequest = [
            method, canonicalURI, Self.canonicalQuery(parts.query), canonicalHeaders, signedHeaders, payloadHash,
        ].joined(separator: "\n")

        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let stringToSign = [
            "AWS4-HMAC-SHA256", amzDate, scope, Self.hex(SHA256.hash(data: Array(canonicalRequest.utf8))),
        ].joined(separator: "\n")

        var key = SymmetricKey(data: Array("AWS4\(secretKey)".utf8))
        for step in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: HMAC<SHA256>.authenticationCode(for: Array(step.utf8), using: key))
        }
        let signature = Self.hex(HMAC<SHA256>.authenticationCode(for: Array(stringToSign.utf8), using: key))
        added.append((
            "authorization",
            "AWS4-HMAC-SHA256 Credential=\(accessKey)/\(scope), SignedHeaders=\(signedHeaders), Signature=\(signature)"
        ))
        return Signing(
            canonicalRequest: canonicalRequest, stringToSign: stringToSign, signedHeaders: signedHeaders,
            signature: signature, headers: added
        )
    }

    // The access key, though no secret to AWS, may be one to the job file (`${…}`): it is
    // left out with the rest.
    package var description: String { "SigV4Signer(region: \(region), service: \(service))" }
    package var debugDescription: String { description }
    package var customMirror: Mirror { Mirror(self, children: ["region": region, "service": service]) }

    /// Headers left out of the signature: the one being made, and botocore's list.
    private static let unsigned: Set<String> = [
        "authorization", "baggage", "connection", "expect", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
        "traceparent", "tracestate", "trailer", "transfer-encoding", "upgrade", "user-agent", "x-amzn-trace-id",
    ]

    /// `20150830T123600Z`.
    static func amzDate(_ date: Date) -> String {
        // Timestamp gives `2015-08-30T12:36:00.000Z`.
        String(Timestamp.string(date).prefix(19).filter { $0 != "-" && $0 != ":" }) + "Z"
    }

    /// The value with the spaces and tabs around it removed and each run inside made one space.
    static func trimmed(_ value: String) -> String {
        var out: [UInt8] = []
        var pendingSpace = false
        for byte in value.utf8 {
            if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                pendingSpace = !out.isEmpty
            } else {
                if pendingSpace { out.append(UInt8(ascii: " ")) }
                pendingSpace = false
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The path with `.` and `..` segments resolved and empty segments dropped, as AWS (and
    /// botocore) normalise it: a trailing `/` stays when anything is left before it.
    static func normalized(_ path: Substring) -> String {
        guard !path.isEmpty else { return "/" }
        var segments: [Substring] = []
        for segment in path.split(separator: "/", omittingEmptySubsequences: true) where segment != "." {
            if segment == ".." {
                if !segments.isEmpty { segments.removeLast() }
            } else {
                segments.append(segment)
            }
        }
        let first = path.hasPrefix("/") ? "/" : ""
        let last = path.hasSuffix("/") && !segments.isEmpty ? "/" : ""
        return first + segments.joined(separator: "/") + last
    }

    /// The canonical query string: names and values decoded, encoded with the unreserved
    /// set, sorted by name then value; `name=` for a name without a value.
    static func canonicalQuery(_ query: Substring?) -> String {
        guard let query, !query.isEmpty else { return "" }
        let pairs = query.split(separator: "&", omittingEmptySubsequences: true).map { piece in
            let equals = piece.firstIndex(of: "=")
            let name = equals.map { piece[..<$0] } ?? piece
            let value = equals.map { piece[piece.index(after: $0)...] } ?? ""
            return (name: encoded(decoded(name)), value: encoded(decoded(value)))
        }
        return pairs.sorted {
            $0.name != $1.name
                ? $0.name.utf8.lexicographicallyPrecedes($1.name.utf8)
                : $0.value.utf8.lexicographicallyPrecedes($1.value.utf8)
        }
        .map { "\($0.name)=\($0.value)" }
        .joined(separator: "&")
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    /// Every byte but the unreserved ones (and `/`, if kept) as `%XY`.
    package static func encoded(_ text: some StringProtocol, keepSlash: Bool = false) -> String {
        encoded(Array(text.utf8), keepSlash: keepSlash)
    }

    private static func encoded(_ bytes: [UInt8], keepSlash: Bool = false) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        for byte in bytes {
            if isUnreserved(byte) || (keepSlash && byte == UInt8(ascii: "/")) {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// An S3 path brought to the one encoding S3 computes without encoding it twice: an
    /// escape of an unreserved byte decoded, other escapes in upper case, bytes that are
    /// neither unreserved nor `/` escaped.
    package static func encodedOnce(_ path: Substring) -> String {
        guard !path.isEmpty else { return "/" }
        let bytes = Array(path.utf8)
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            if let byte = escape(bytes, at: index) {
                out += isUnreserved(byte) ? [byte] : [UInt8(ascii: "%"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]]
                index += 3
            } else {
                out += Array(encoded([bytes[index]], keepSlash: true).utf8)
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of a query name or value with `+` read as a space and each valid `%XY`
    /// escape decoded; a `%` that starts none stays.
    private static func decoded(_ text: Substring) -> [UInt8] {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            if let byte = escape(bytes, at: index) {
                out.append(byte)
                index += 3
            } else {
                out.append(bytes[index] == UInt8(ascii: "+") ? UInt8(ascii: " ") : bytes[index])
                index += 1
            }
        }
        return out
    }

    private static func escape(_ bytes: [UInt8], at index: Int) -> UInt8? {
        guard bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
            let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
        else { return nil }
        return high << 4 | low
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    private static let lowerHexDigits = Array("0123456789abcdef".utf8)

    /// Lower-case hex, as SigV4 writes hashes and signatures.
    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        String(decoding: bytes.flatMap { [lowerHexDigits[Int($0 >> 4)], lowerHexDigits[Int($0 & 0xF)]] }, as: UTF8.self)
    }
}

/// An absolute URL cut into what SigV4 signs, without interpreting it: the host as the
/// Host header carries it (a default port left out), the raw path and the raw query.
private struct URLParts {
    var host = ""
    var path: Substring = ""
    var query: Substring?

    init(_ url: String) {
        var rest = Substring(url)
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        var scheme = ""
        if let separator = rest.range(of: "://") {
            scheme = rest[..<separator.lowerBound].lowercased()
            rest = rest[separator.upperBound...]
            let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
            var authority = rest[..<authorityEnd]
            if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
            host = Self.withoutDefaultPort(String(authority), scheme: scheme)
            rest = rest[authorityEnd...]
        }
        if let question = rest.firstIndex(of: "?") {
            path = rest[..<question]
            query = rest[rest.index(after: question)...]
        } else {
            path = rest
        }
    }

    private static func withoutDefaultPort(_ authority: String, scheme: String) -> String {
        let defaultPort = scheme == "https" ? ":443" : scheme == "http" ? ":80" : nil
        guard let defaultPort, authority.hasSuffix(defaultPort) else { return authority }
        let host = authority.dropLast(defaultPort.count)
        // `[::1]:443` has its port after the bracket; `::1:443` is no host and port.
        guard !host.contains(":") || host.hasSuffix("]") else { return authority }
        return String(host)
    }
}
