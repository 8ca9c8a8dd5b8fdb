import Foundation
import MirrorHTTP
package import MirrorModel

/// Where in S3 mirror keeps its state and snapshots, and how to reach it: a bucket and a
/// key prefix (from `s3://bucket/prefix`), the endpoint, the region, the addressing style
/// and the credentials, from options first, then AWS's standard environment variables.
/// Prints, dumps and reflects without its credentials.
package struct S3Configuration: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// How a bucket is named in a request's URL.
    package enum Addressing: String, Sendable, CaseIterable {
        /// `https://endpoint/bucket/key`: MinIO, moto, Ceph, and any endpoint given by IP.
        case path
        /// `https://bucket.endpoint/key`: AWS's default.
        case virtualHost = "virtual"
    }

    package let bucket: String
    /// The key prefix of `s3://bucket/prefix`, without slashes at either end; may be empty.
    package let prefix: String
    package let region: String
    /// `scheme://host[:port]`, without a trailing slash.
    package let endpoint: String
    package let addressing: Addressing
    package let keys: Keys
    /// The keys given in the environment; nil for a web identity's, which STS gives.
    package var credentials: S3Credentials? {
        if case let .given(credentials) = keys { credentials } else { nil }
    }
    /// Seconds, for each exchange (one part of a multipart upload is one exchange).
    package var timeout: Double = 300
    /// Retries of a transient failure (a network error, a timeout, a 5xx, 408 or 429).
    package var retries: Int = 5
    /// Bytes in each part of a multipart upload; S3 takes no part under 5 MiB but the last.
    package var partSize: Int = 8 << 20
    /// `upload(_:fileAt:)` sends a file of this size or more in parts.
    package var multipartThreshold: Int = 16 << 20

    /// Where the keys requests are signed with come from.
    package enum Keys: Sendable {
        /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`.
        case given(S3Credentials)
        /// Temporary keys STS gives for a role and a web identity token (`S3WebIdentity`).
        case webIdentity(S3WebIdentity)
    }

    /// The smallest part S3 takes (all but the last).
    package static let minimumPartSize = 5 << 20
    /// The most parts one upload may have.
    package static let maximumParts = 10_000

    /// The settings of `url` (`s3://bucket/prefix`), each from its option if given, else
    /// from `environment`: the endpoint from `AWS_ENDPOINT_URL_S3`, then `AWS_ENDPOINT_URL`,
    /// else `https://s3.<region>.amazonaws.com`; the region from `AWS_REGION`, then
    /// `AWS_DEFAULT_REGION`, else `us-east-1`; the credentials from `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`, else from STS for the role
    /// `AWS_ROLE_ARN` and the token in `AWS_WEB_IDENTITY_TOKEN_FILE` (at `AWS_ENDPOINT_URL_STS`,
    /// then `AWS_ENDPOINT_URL`, else `https://sts.<region>.amazonaws.com`). Addressing is virtual-host on AWS's
    /// own endpoint and path-style on any other (or when the bucket's name has a dot, which
    /// AWS's certificate does not cover). Every problem found is reported at once.
    package init(url: String, environment: [String: String], region: String? = nil, endpoint: String? = nil,
                 addressing: Addressing? = nil) throws(S3ConfigurationError) {
        var problems: [String] = []
        func given(_ name: String) -> String? {
            environment[name].flatMap { $0.isEmpty ? nil : $0 }
        }

        var bucket = ""
        var prefix = ""
        if let location = Self.location(url) {
            (bucket, prefix) = location
            if !Self.isBucketName(bucket) {
                problems.append("'\(bucket)' is not a valid bucket name (3 to 63 lower-case letters, digits, '.' and '-', "
                    + "starting and ending with a letter or digit)")
            }
        } else {
            problems.append("'\(url)' is not an S3 location such as s3://bucket/prefix")
        }

        let region = region ?? given("AWS_REGION") ?? given("AWS_DEFAULT_REGION") ?? "us-east-1"
        var chosenEndpoint = "https://s3.\(region).amazonaws.com"
        var custom = false
        let candidates = [("the endpoint option", endpoint), ("AWS_ENDPOINT_URL_S3", given("AWS_ENDPOINT_URL_S3")),
                          ("AWS_ENDPOINT_URL", given("AWS_ENDPOINT_URL"))]
        if let (source, value) = candidates.first(where: { $0.1 != nil }).map({ ($0.0, $0.1!) }) {
            switch Self.endpoint(value, source: source, example: "https://s3.example.com") {
            case let .success(trimmed):
                chosenEndpoint = trimmed
                custom = true
            case let .failure(problem):
                problems.append(problem.description)
            }
        }

        // AWS's order: keys in the environment, then a web identity (what EKS mounts).
        let accessKey = given("AWS_ACCESS_KEY_ID")
        let secretKey = given("AWS_SECRET_ACCESS_KEY")
        let tokenFile = given("AWS_WEB_IDENTITY_TOKEN_FILE")
        let roleARN = given("AWS_ROLE_ARN")
        var keys: Keys?
        if accessKey != nil || secretKey != nil || tokenFile == nil && roleARN == nil {
            if accessKey == nil { problems.append("AWS_ACCESS_KEY_ID is not set") }
            if secretKey == nil { problems.append("AWS_SECRET_ACCESS_KEY is not set") }
            if let accessKey, let secretKey {
                keys = .given(S3Credentials(accessKey: accessKey, secretKey: secretKey, sessionToken: given("AWS_SESSION_TOKEN")))
            }
        } else {
            if tokenFile == nil { problems.append("AWS_WEB_IDENTITY_TOKEN_FILE is not set, and AWS_ROLE_ARN is") }
            if roleARN == nil { problems.append("AWS_ROLE_ARN is not set, and AWS_WEB_IDENTITY_TOKEN_FILE is") }
            var stsEndpoint = "https://sts.\(region).amazonaws.com"
            let stsCandidates = [("AWS_ENDPOINT_URL_STS", given("AWS_ENDPOINT_URL_STS")), ("AWS_ENDPOINT_URL", given("AWS_ENDPOINT_URL"))]
            if let (source, value) = stsCandidates.first(where: { $0.1 != nil }).map({ ($0.0, $0.1!) }) {
                switch Self.endpoint(value, source: source, example: "https://sts.example.com") {
                case let .success(trimmed): stsEndpoint = trimmed
                case let .failure(problem): problems.append(problem.description)
                }
            }
            if let tokenFile, let roleARN {
                keys = .webIdentity(S3WebIdentity(roleARN: roleARN, tokenFile: tokenFile,
                                                  sessionName: given("AWS_ROLE_SESSION_NAME") ?? "mirror",
                                                  endpoint: stsEndpoint))
            }
        }
        guard problems.isEmpty, let keys else { throw S3ConfigurationError(problems: problems) }

        self.bucket = bucket
        self.prefix = prefix
        self.region = region
        self.endpoint = chosenEndpoint
        self.addressing = addressing ?? (custom || bucket.contains(".") ? .path : .virtualHost)
        self.keys = keys
    }

    /// What is wrong with an endpoint, said of the setting it came from.
    struct EndpointProblem: Error {
        let description: String
    }

    /// `value` (from `source`) as an endpoint, `http(s)://host[:port]`, its trailing slashes
    /// dropped; else what is wrong with it: a scheme other than http(s), no host, an empty
    /// port or one outside 1-65535, a path, a query, a fragment, or a user name or password
    /// (said without showing it). Taken as written, a port left empty would be port 80 and a
    /// path would be put before every bucket: requests to a place no one meant.
    static func endpoint(_ value: String, source: String, example: String) -> Result<String, EndpointProblem> {
        let form = "an endpoint is http(s)://host[:port], such as \(example)"
        func problem(_ what: String, then advice: String = "") -> Result<String, EndpointProblem> {
            .failure(EndpointProblem(description: "'\(value)' (\(source)) \(what): \(form)" + advice))
        }
        guard let separator = value.range(of: "://") else { return problem("has no scheme") }
        let scheme = value[..<separator.lowerBound]
        guard ["http", "https"].contains(scheme.lowercased()) else {
            return problem("has the scheme '\(scheme)', not http or https")
        }
        var rest = value[separator.upperBound...]
        while rest.hasSuffix("/") { rest.removeLast() }
        let trimmed = String(value[..<rest.endIndex])
        let authorityEnd = rest.firstIndex { "/?#".contains($0) } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        // No '@' belongs in an endpoint; what is before one may be a password: not shown.
        if rest.contains("@") {
            return .failure(EndpointProblem(description: "\(source) has a user name or password before '@' (not shown here): "
                + "\(form); the keys go in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"))
        }
        let tail = rest[authorityEnd...]
        switch tail.first {
        case "/":
            let path = tail.prefix { !"?#".contains($0) }
            if path.contains(where: { $0 != "/" }) {
                return problem("has a path ('\(path)')", then: "; the bucket and prefix go in s3://bucket/prefix")
            }
            if let mark = tail.firstIndex(where: { "?#".contains($0) }) {
                return problem("has a \(tail[mark] == "?" ? "query" : "fragment") ('\(tail[mark...])')")
            }
        case "?": return problem("has a query ('\(tail)')")
        case "#": return problem("has a fragment ('\(tail)')")
        default: break
        }
        // The host, then ':' and the port (an IPv6 address is in brackets).
        let hostEnd = authority.hasPrefix("[") ? authority.firstIndex(of: "]").map(authority.index(after:)) ?? authority.endIndex
            : authority.firstIndex(of: ":") ?? authority.endIndex
        let host = authority[..<hostEnd]
        guard !host.isEmpty else { return problem("has no host") }
        let portText = authority[hostEnd...]
        if let colon = portText.first {
            let digits = portText.dropFirst()
            guard colon == ":" else { return problem("has '\(portText)' after its host, not ':' and a port") }
            guard !digits.isEmpty else { return problem("has no port after ':' (give one from 1 to 65535, or no ':')") }
            let numeric = digits.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
            guard numeric, let port = Int(digits), (1...65535).contains(port) else {
                let shown = numeric ? String(digits) : "'\(digits)'"
                return problem("has the port \(shown), not one from 1 to 65535")
            }
        }
        guard HTTPClient.isHTTP(trimmed) else { return problem("has the host '\(host)', which is no host name or IP address") }
        return .success(trimmed)
    }

    /// The bucket and the prefix of `s3://bucket/prefix` (slashes around the prefix dropped).
    static func location(_ url: String) -> (bucket: String, prefix: String)? {
        guard url.lowercased().hasPrefix("s3://") else { return nil }
        let rest = url.dropFirst(5)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let bucket = String(rest[..<slash])
        guard !bucket.isEmpty else { return nil }
        var prefix = rest[slash...]
        while prefix.hasPrefix("/") { prefix = prefix.dropFirst() }
        while prefix.hasSuffix("/") { prefix = prefix.dropLast() }
        return (bucket, String(prefix))
    }

    /// S3's rule for new buckets: 3 to 63 of `a-z 0-9 . -`, a letter or digit at each end.
    static func isBucketName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        func alphanumeric(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
        guard (3...63).contains(bytes.count), let first = bytes.first, let last = bytes.last,
              alphanumeric(first), alphanumeric(last) else { return false }
        return bytes.allSatisfy { alphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }
    }

    /// The object key of `name` under the prefix: `prefix/name`, or `name` when there is none.
    package func key(_ name: String) -> String {
        prefix.isEmpty ? name : prefix + "/" + name
    }

    /// The URL of `key` in the bucket (`key` percent-encoded but for `/`), or of the bucket itself.
    func url(key: String?) -> String {
        let encodedKey = key.map { "/" + SigV4Signer.encoded($0, keepSlash: true) }
        switch addressing {
        case .path:
            return endpoint + "/" + bucket + (encodedKey ?? "")
        case .virtualHost:
            let separator = endpoint.range(of: "://")!
            return endpoint[..<separator.upperBound] + bucket + "." + endpoint[separator.upperBound...] + (encodedKey ?? "/")
        }
    }

    package var description: String {
        "S3Configuration(s3://\(bucket)/\(prefix), endpoint: \(endpoint), region: \(region), addressing: \(addressing.rawValue))"
    }
    package var debugDescription: String { description }
    package var customMirror: Mirror {
        Mirror(self, children: ["bucket": bucket, "prefix": prefix, "endpoint": endpoint, "region": region,
                                "addressing": addressing.rawValue])
    }
}

/// The access key, the secret key and the session token S3's requests are signed with.
/// Prints, dumps and reflects as its access key's length only.
package struct S3Credentials: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    package let accessKey: String
    package let secretKey: String
    package let sessionToken: String?

    package init(accessKey: String, secretKey: String, sessionToken: String?) {
        self.accessKey = accessKey
        self.secretKey = secretKey
        self.sessionToken = sessionToken
    }

    /// The secrets, named for messages, that no error, log line or description may show.
    package var secrets: [Redactor.Secret] {
        [Redactor.Secret(name: "AWS_ACCESS_KEY_ID", value: accessKey),
         Redactor.Secret(name: "AWS_SECRET_ACCESS_KEY", value: secretKey)]
            + (sessionToken.map { [Redactor.Secret(name: "AWS_SESSION_TOKEN", value: $0)] } ?? [])
    }

    package var description: String { "S3Credentials(\(sessionToken == nil ? "key" : "key and session token"))" }
    package var debugDescription: String { description }
    package var customMirror: Mirror { Mirror(self, children: ["sessionToken": sessionToken != nil]) }
}

/// Every problem of an S3 configuration, one a line.
package struct S3ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    package let problems: [String]

    package var description: String { problems.joined(separator: "\n") }
}

/// A role assumed with a web identity token, as a Kubernetes service account on EKS
/// gets one: `AWS_ROLE_ARN`, the token's file `AWS_WEB_IDENTITY_TOKEN_FILE` (read again
/// each time keys are fetched: the kubelet rotates it), `AWS_ROLE_SESSION_NAME`, and the
/// STS endpoint asked. Holds no secret: the token stays in its file.
package struct S3WebIdentity: Sendable, Equatable {
    package let roleARN: String
    package let tokenFile: String
    package let sessionName: String
    package let endpoint: String
}
