import Foundation
@testable import MirrorRemote
import Testing

@Suite("S3 configuration", .timeLimit(.minutes(6)))
struct S3ConfigurationTests {
    let keys = ["AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"]

    @Test("AWS's endpoint for the region, virtual-host addressing; the prefix's slashes dropped")
    func defaults() throws {
        let configuration = try S3Configuration(url: "s3://mirror-state/team/prod/", environment: keys)
        #expect(configuration.bucket == "mirror-state")
        #expect(configuration.prefix == "team/prod")
        #expect(configuration.region == "us-east-1")
        #expect(configuration.endpoint == "https://s3.us-east-1.amazonaws.com")
        #expect(configuration.addressing == .virtualHost)
        #expect(configuration.key("lease") == "team/prod/lease")
        #expect(configuration.url(key: "team/prod/a b") == "https://mirror-state.s3.us-east-1.amazonaws.com/team/prod/a%20b")
        #expect(configuration.url(key: nil) == "https://mirror-state.s3.us-east-1.amazonaws.com/")
        #expect(configuration.credentials?.sessionToken == nil && configuration.credentials != nil)

        let regional = try S3Configuration(url: "s3://mirror-state", environment: keys.merging(
            ["AWS_DEFAULT_REGION": "eu-west-1", "AWS_SESSION_TOKEN": "token"]) { $1 })
        #expect(regional.endpoint == "https://s3.eu-west-1.amazonaws.com")
        #expect(regional.prefix == "")
        #expect(regional.key("lease") == "lease")
        #expect(regional.credentials?.sessionToken == "token")
        #expect(try S3Configuration(url: "s3://a.b.c", environment: keys).addressing == .path)
    }

    @Test("the endpoint option, then AWS_ENDPOINT_URL_S3, then AWS_ENDPOINT_URL; a custom endpoint is path-style")
    func endpoints() throws {
        var environment = keys.merging(["AWS_REGION": "auto", "AWS_DEFAULT_REGION": "eu-west-1",
                                         "AWS_ENDPOINT_URL": "https://general.example.com/"]) { $1 }
        var configuration = try S3Configuration(url: "s3://bucket/p", environment: environment)
        #expect(configuration.endpoint == "https://general.example.com")
        #expect(configuration.region == "auto")
        #expect(configuration.url(key: "p/k") == "https://general.example.com/bucket/p/k")
        #expect(configuration.url(key: nil) == "https://general.example.com/bucket")

        environment["AWS_ENDPOINT_URL_S3"] = "http://127.0.0.1:9000"
        configuration = try S3Configuration(url: "s3://bucket/p", environment: environment)
        #expect(configuration.endpoint == "http://127.0.0.1:9000")
        configuration = try S3Configuration(url: "s3://bucket/p", environment: environment, region: "us-west-2",
                                            endpoint: "https://acct.r2.cloudflarestorage.com", addressing: .virtualHost)
        #expect(configuration.url(key: "p/k") == "https://bucket.acct.r2.cloudflarestorage.com/p/k")
        #expect(configuration.region == "us-west-2")
    }

    @Test("a malformed endpoint is a config error naming the variable and what is wrong", arguments: [
        ("http://127.0.0.1:", "'http://127.0.0.1:' (AWS_ENDPOINT_URL_S3) has no port after ':' (give one from 1 to 65535, "
            + "or no ':'): an endpoint is http(s)://host[:port], such as https://s3.example.com"),
        ("http://:9000", "'http://:9000' (AWS_ENDPOINT_URL_S3) has no host: an endpoint is http(s)://host[:port], "
            + "such as https://s3.example.com"),
        ("https://", "'https://' (AWS_ENDPOINT_URL_S3) has no host: an endpoint is http(s)://host[:port], "
            + "such as https://s3.example.com"),
        ("http://127.0.0.1:9000/state", "'http://127.0.0.1:9000/state' (AWS_ENDPOINT_URL_S3) has a path ('/state'): "
            + "an endpoint is http(s)://host[:port], such as https://s3.example.com; the bucket and prefix go in s3://bucket/prefix"),
        ("http://127.0.0.1:9000?region=x", "'http://127.0.0.1:9000?region=x' (AWS_ENDPOINT_URL_S3) has a query ('?region=x'): "
            + "an endpoint is http(s)://host[:port], such as https://s3.example.com"),
        ("http://127.0.0.1:9000/#top", "'http://127.0.0.1:9000/#top' (AWS_ENDPOINT_URL_S3) has a fragment ('#top'): "
            + "an endpoint is http(s)://host[:port], such as https://s3.example.com"),
        ("s3://127.0.0.1:9000", "'s3://127.0.0.1:9000' (AWS_ENDPOINT_URL_S3) has the scheme 's3', not http or https: "
            + "an endpoint is http(s)://host[:port], such as https://s3.example.com"),
        ("127.0.0.1:9000", "'127.0.0.1:9000' (AWS_ENDPOINT_URL_S3) has no scheme: an endpoint is http(s)://host[:port], "
            + "such as https://s3.example.com"),
        ("http://127.0.0.1:0", "'http://127.0.0.1:0' (AWS_ENDPOINT_URL_S3) has the port 0, not one from 1 to 65535: "
            + "an endpoint is http(s)://host[:port], such as https://s3.example.com"),
        ("http://127.0.0.1:65536", "'http://127.0.0.1:65536' (AWS_ENDPOINT_URL_S3) has the port 65536, not one from 1 to 65535: "
            + "an endpoint is http(s)://host[:port], such as https://s3.example.com"),
        ("http://127.0.0.1:9x", "'http://127.0.0.1:9x' (AWS_ENDPOINT_URL_S3) has the port '9x', not one from 1 to 65535: "
            + "an endpoint is http(s)://host[:port], such as https://s3.example.com"),
        ("http://s3 host", "'http://s3 host' (AWS_ENDPOINT_URL_S3) has the host 's3 host', which is no host name or "
            + "IP address: an endpoint is http(s)://host[:port], such as https://s3.example.com"),
        ("https://key:hidden@s3.example.com", "AWS_ENDPOINT_URL_S3 has a user name or password before '@' (not shown here): "
            + "an endpoint is http(s)://host[:port], such as https://s3.example.com; the keys go in AWS_ACCESS_KEY_ID "
            + "and AWS_SECRET_ACCESS_KEY"),
    ])
    func malformedEndpoints(endpoint: String, message: String) {
        let error = #expect(throws: S3ConfigurationError.self) {
            try S3Configuration(url: "s3://bucket/p", environment: keys.merging(["AWS_ENDPOINT_URL_S3": endpoint]) { $1 })
        }
        #expect(error?.problems == [message])
    }

    @Test("a well-formed endpoint is taken as written: IPv6, a port, upper-case scheme, a trailing slash")
    func wellFormedEndpoints() throws {
        for (given, endpoint) in [("http://[::1]:9000/", "http://[::1]:9000"), ("HTTPS://S3.Example.com:443", "HTTPS://S3.Example.com:443"),
                                  ("http://127.0.0.1:65535", "http://127.0.0.1:65535"), ("https://minio.internal", "https://minio.internal")] {
            let configuration = try S3Configuration(url: "s3://bucket/p", environment: keys.merging(["AWS_ENDPOINT_URL_S3": given]) { $1 })
            #expect(configuration.endpoint == endpoint)
        }
    }

    @Test("every problem is reported at once, and no secret in any")
    func problems() {
        let error = #expect(throws: S3ConfigurationError.self) {
            try S3Configuration(url: "s3://Bad_Bucket/x", environment: ["AWS_ENDPOINT_URL": "ftp://x",
                                                                         "AWS_SECRET_ACCESS_KEY": "hidden"])
        }
        #expect(error?.problems == [
            "'Bad_Bucket' is not a valid bucket name (3 to 63 lower-case letters, digits, '.' and '-', starting and ending with a letter or digit)",
            "'ftp://x' (AWS_ENDPOINT_URL) has the scheme 'ftp', not http or https: an endpoint is http(s)://host[:port], "
                + "such as https://s3.example.com",
            "AWS_ACCESS_KEY_ID is not set",
        ])
        let other = #expect(throws: S3ConfigurationError.self) { try S3Configuration(url: "https://bucket/x", environment: [:]) }
        #expect(other?.description == """
            'https://bucket/x' is not an S3 location such as s3://bucket/prefix
            AWS_ACCESS_KEY_ID is not set
            AWS_SECRET_ACCESS_KEY is not set
            """)
    }

    @Test("without keys, a web identity: AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE, at STS's endpoint for the region or AWS_ENDPOINT_URL_STS")
    func webIdentity() throws {
        let identity = ["AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/mirror", "AWS_WEB_IDENTITY_TOKEN_FILE": "/var/run/token",
                        "AWS_REGION": "eu-west-1"]
        let configuration = try S3Configuration(url: "s3://bucket/p", environment: identity)
        #expect(configuration.credentials == nil)
        guard case let .webIdentity(web) = configuration.keys else {
            Issue.record("not a web identity: \(configuration.keys)")
            return
        }
        #expect(web == S3WebIdentity(roleARN: "arn:aws:iam::123456789012:role/mirror", tokenFile: "/var/run/token",
                                     sessionName: "mirror", endpoint: "https://sts.eu-west-1.amazonaws.com"))
        let local = try S3Configuration(url: "s3://bucket/p", environment: identity.merging(
            ["AWS_ENDPOINT_URL": "http://127.0.0.1:5000/", "AWS_ROLE_SESSION_NAME": "pod-3"]) { $1 })
        guard case let .webIdentity(web) = local.keys else { return }
        #expect(web.endpoint == "http://127.0.0.1:5000")
        #expect(web.sessionName == "pod-3")
        // Keys in the environment come first, as AWS's SDKs take them.
        #expect(try S3Configuration(url: "s3://bucket/p", environment: identity.merging(keys) { $1 }).credentials != nil)
        let half = #expect(throws: S3ConfigurationError.self) {
            try S3Configuration(url: "s3://bucket/p", environment: ["AWS_ROLE_ARN": "arn:aws:iam::1:role/r",
                                                                    "AWS_ENDPOINT_URL_STS": "sts.example.com"])
        }
        #expect(half?.problems == ["AWS_WEB_IDENTITY_TOKEN_FILE is not set, and AWS_ROLE_ARN is",
                                   "'sts.example.com' (AWS_ENDPOINT_URL_STS) has no scheme: an endpoint is http(s)://host[:port], "
                                       + "such as https://sts.example.com"])
    }
}
