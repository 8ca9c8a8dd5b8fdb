import Foundation
import MirrorHTTP
import MirrorModel

/// The keys S3's requests are signed with, and the redactor that masks them: the keys given
/// in the environment, or a web identity's temporary keys from STS
/// (`AssumeRoleWithWebIdentity`, unsigned, the token read from its file each time, since the
/// kubelet rotates it), fetched when first needed and again five minutes before they expire.
/// Requests that need keys while they are fetched wait for that one fetch.
actor S3Keys {
    /// What a request is signed with, and what must not show in its errors.
    struct Signing: Sendable {
        let auth: AuthSpec
        let redactor: Redactor
    }

    private let configuration: S3Configuration
    private let http: HTTPClient
    private let sender: RetryingSender
    private var current: (signing: Signing, renewAt: Date)?
    private var fetching: Task<Result<(Signing, Date), S3Error>, Never>?

    /// Temporary keys are fetched again this long before they expire.
    static let margin: TimeInterval = 300
    /// What STS is asked for: an hour, as AWS's SDKs ask.
    static let duration = 3600

    init(configuration: S3Configuration, http: HTTPClient, sender: RetryingSender) {
        self.configuration = configuration
        self.http = http
        self.sender = sender
        if case let .given(credentials) = configuration.keys {
            current = (Self.signing(credentials, configuration: configuration, secrets: []), .distantFuture)
        }
    }

    static func signing(_ credentials: S3Credentials, configuration: S3Configuration, secrets: [Redactor.Secret]) -> Signing {
        let secrets = credentials.secrets + secrets
        return Signing(
            auth: AuthSpec(
                name: "s3", key: "s3 \(configuration.endpoint) \(configuration.bucket)",
                kind: .awsSigV4(.init(accessKey: credentials.accessKey, secretKey: credentials.secretKey,
                                      sessionToken: credentials.sessionToken, region: configuration.region, service: "s3")),
                secrets: secrets),
            redactor: Redactor(secrets: secrets))
    }

    /// The keys to sign a request with now.
    func signing() async throws(S3Error) -> Signing {
        if let current, current.renewAt > Date() { return current.signing }
        guard case let .webIdentity(identity) = configuration.keys else { return current!.signing }
        let task = fetching ?? Task { [configuration, http, sender] in
            await Self.fetch(identity, configuration: configuration, http: http, sender: sender)
        }
        fetching = task
        let result = await task.value
        if fetching == task { fetching = nil }
        let (signing, renewAt) = try result.get()
        current = (signing, renewAt)
        return signing
    }

    /// Asks STS for keys for `identity`'s role.
    private static func fetch(_ identity: S3WebIdentity, configuration: S3Configuration, http: HTTPClient,
                              sender: RetryingSender) async -> Result<(Signing, Date), S3Error> {
        let method = "AssumeRoleWithWebIdentity"
        let place = identity.endpoint + "/"
        func failure(_ why: String, status: Int? = nil) -> S3Error {
            S3Error.malformed(method, bucket: configuration.bucket, key: nil, status: status, why).asked(of: place)
        }
        guard let data = FileManager.default.contents(atPath: identity.tokenFile) else {
            return .failure(.file(method, bucket: configuration.bucket, key: nil,
                                  "cannot read the web identity token file '\(identity.tokenFile)' (AWS_WEB_IDENTITY_TOKEN_FILE)")
                .asked(of: place))
        }
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else {
            return .failure(.file(method, bucket: configuration.bucket, key: nil,
                                  "the web identity token file '\(identity.tokenFile)' is empty").asked(of: place))
        }
        let tokenSecret = Redactor.Secret(name: "AWS_WEB_IDENTITY_TOKEN_FILE", value: token)
        let redactor = Redactor(secrets: [tokenSecret])
        let form = [("Action", method), ("Version", "2011-06-15"), ("RoleArn", identity.roleARN),
                    ("RoleSessionName", identity.sessionName), ("WebIdentityToken", token),
                    ("DurationSeconds", String(duration))]
            .map { SigV4Signer.encoded($0.0) + "=" + SigV4Signer.encoded($0.1) }.joined(separator: "&")
        let url = RedactedURL(real: place, redactor: redactor)
        var request = HTTPRequest(
            method: "POST", url: url,
            headers: [Header(name: "content-type", value: RedactedText(real: "application/x-www-form-urlencoded", redactor: redactor))],
            body: Array(form.utf8), timeout: configuration.timeout, maxBytes: 1 << 20, redactor: redactor, auth: nil)
        request.ownOriginOnly = true
        let outcome = await S3Client.send(request, http: http, sender: sender)
        let response: HTTPResponse
        switch outcome.result {
        case let .failure(error):
            return .failure(.transport(method, bucket: configuration.bucket, key: nil, error, retries: outcome.retries)
                .asked(of: place))
        case let .success(answer):
            response = answer
        }
        guard (200...299).contains(response.status) else {
            return .failure(.answered(method, bucket: configuration.bucket, key: nil, status: response.status,
                                      body: response.body, retries: outcome.retries, redactor: redactor).asked(of: place))
        }
        let answer = S3XML(response.body)
        guard let accessKey = answer.text("AccessKeyId"), let secretKey = answer.text("SecretAccessKey"),
              let sessionToken = answer.text("SessionToken"), !accessKey.isEmpty, !secretKey.isEmpty else {
            return .failure(failure("no AccessKeyId, SecretAccessKey and SessionToken in STS's answer", status: response.status))
        }
        let now = Date()
        let expiry = answer.text("Expiration").flatMap(Self.date) ?? now.addingTimeInterval(900)
        let credentials = S3Credentials(accessKey: accessKey, secretKey: secretKey, sessionToken: sessionToken)
        return .success((signing(credentials, configuration: configuration, secrets: [tokenSecret]),
                         max(now.addingTimeInterval(30), expiry.addingTimeInterval(-margin))))
    }

    /// An ISO 8601 time, its fraction of a second of any length (STS writes 0 to 6 digits).
    static func date(_ text: String) -> Date? {
        if let date = Timestamp.date(text) { return date }
        guard let dot = text.firstIndex(of: ".") else { return nil }
        let rest = text[text.index(after: dot)...].drop { $0.isASCII && $0.isNumber }
        return Timestamp.date(String(text[..<dot]) + String(rest))
    }
}
