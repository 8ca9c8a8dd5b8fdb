import AsyncHTTPClient
import Foundation
import Logging
@testable import MirrorServe
import MirrorTestSupport
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

/// A self-signed certificate for 127.0.0.1 and its key, made by `openssl` as `name`.pem and
/// `name`.key in `folder`.
private func certificate(_ name: String, in folder: String) throws -> (certificate: String, key: String) {
    let (certificate, key) = (folder + "/\(name).pem", folder + "/\(name).key")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                         "-keyout", key, "-out", certificate, "-days", "2", "-subj", "/CN=\(name)",
                         "-addext", "subjectAltName=IP:127.0.0.1"]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
    return (certificate, key)
}

/// A client that trusts only the certificate in `path`.
private func client(trusting path: String) throws -> HTTPClient {
    var tls = TLSConfiguration.makeClientConfiguration()
    tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(path))
    return HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
}

/// Status, headers and body of `url`, asked with `headers`.
private func download(_ url: String, headers: [(String, String)] = [], with client: HTTPClient) async throws -> Got {
    var request = HTTPClientRequest(url: url)
    for (name, value) in headers { request.headers.add(name: name, value: value) }
    let response = try await client.execute(request, timeout: .seconds(60))
    let body = try await response.body.collect(upTo: 1 << 24)
    var fields: [String: String] = [:]
    for field in response.headers { fields[field.name.lowercased()] = field.value }
    return Got(status: Int(response.status.code), headers: fields, body: Array(body.readableBytesView))
}

/// Status and body of `url`. (A client refused the certificate tries to connect again until
/// `timeout` has passed.)
private func get(_ url: String, with client: HTTPClient, timeout: TimeAmount = .seconds(60)) async throws -> (Int, String) {
    let response = try await client.execute(HTTPClientRequest(url: url), timeout: timeout)
    let body = try await response.body.collect(upTo: 1 << 20)
    return (Int(response.status.code), String(buffer: body))
}

private let quiet = Logger(label: "serve", factory: { _ in SwiftLogNoOpLogHandler() })

@Suite("mirror serve over TLS", .timeLimit(.minutes(6)))
struct ServeTLSTests {
    @Test("downloaded files over HTTPS, which the process reads to encrypt: whole, by ranges, and one larger than what is read at once")
    func files() async throws {
        let harness = try Harness()
        let size = ServedFiles.readWhole + 40_000
        let content: [UInt8] = (0 ..< size).map { (index: Int) -> UInt8 in UInt8(truncatingIfNeeded: index * 7 + index / 251) }
        let small = Array(content.prefix(300))
        let smallPath = try await download("a.jpg", small, contentType: "image/jpeg", into: harness)
        let largePath = try await download("big.bin", content, into: harness)
        let keys = try certificate("served", in: harness.folder)
        var options = MirrorServer.Options(output: harness.output)
        options.port = 0
        options.tls = MirrorServer.TLSFiles(certificate: keys.certificate, key: keys.key)
        let https = try client(trusting: keys.certificate)
        try await MirrorServer(options: options).with(logger: quiet) { port in
            let base = "https://127.0.0.1:\(port)/_mirror/"
            let whole = try await download(base + smallPath, with: https)
            #expect(whole.status == 200 && whole.body == small && whole.headers["content-type"] == "image/jpeg")
            let part = try await download(base + smallPath, headers: [("Range", "bytes=10-19")], with: https)
            #expect(part.status == 206 && part.body == Array(small[10 ..< 20]) && part.headers["content-range"] == "bytes 10-19/300")
            let large = try await download(base + largePath, with: https)
            #expect(large.status == 200 && large.headers["content-length"] == String(size) && large.body == content)
            let across = try await download(base + largePath, headers: [("Range", "bytes=65000-\(size - 2)")], with: https)
            #expect(across.status == 206 && across.body == Array(content[65000 ..< size - 1]))
        }
        try await https.shutdown()
    }

    @Test("HTTPS answers the bytes plain HTTP does; after a reload a new connection gets the new certificate, an open one keeps its own")
    func servesAndReloads() async throws {
        let harness = try Harness()
        let api = EditableAPI([[#"{"id":"1","n":12345678901234567890123}"#, #"{"id":"2"}"#]])
        try await FixtureServer.with(api.handler) { server in
            _ = try await harness.run(itemsJob(), server: server)
        }
        let first = try certificate("first", in: harness.folder)
        let second = try certificate("second", in: harness.folder)
        let (served, servedKey) = (harness.folder + "/served.pem", harness.folder + "/served.key")
        try FileManager.default.copyItem(atPath: first.certificate, toPath: served)
        try FileManager.default.copyItem(atPath: first.key, toPath: servedKey)
        let plain = try await serving(harness) { base in try await get(base + "/_mirror/tables/t_item") }
        #expect(plain.status == 200 && plain.text == "[\n{\"id\":\"1\",\"n\":12345678901234567890123},\n{\"id\":\"2\"}\n]\n")

        var options = MirrorServer.Options(output: harness.output)
        options.port = 0
        options.tls = MirrorServer.TLSFiles(certificate: served, key: servedKey)
        let (reloads, reload) = AsyncStream.makeStream(of: Void.self)
        let (firstClient, secondClient, lateClient) = (try client(trusting: first.certificate),
                                                       try client(trusting: second.certificate),
                                                       try client(trusting: first.certificate))
        try await MirrorServer(options: options).with(logger: quiet, reloads: reloads) { port in
            let url = "https://127.0.0.1:\(port)/_mirror/tables/t_item"
            let before = try await get(url, with: firstClient)
            #expect(before.0 == 200 && before.1 == plain.text)
            // Only the first certificate is served yet.
            await #expect(throws: (any Error).self) { try await get(url, with: secondClient, timeout: .seconds(1)) }

            try FileManager.default.removeItem(atPath: served)
            try FileManager.default.removeItem(atPath: servedKey)
            try FileManager.default.copyItem(atPath: second.certificate, toPath: served)
            try FileManager.default.copyItem(atPath: second.key, toPath: servedKey)
            reload.yield()
            var after: (Int, String)?
            for _ in 0..<500 where after == nil {
                after = try? await get(url, with: secondClient)
                if after == nil { try await Task.sleep(for: .milliseconds(10)) }
            }
            #expect(after?.0 == 200 && after?.1 == plain.text)
            // A new connection trusting the first certificate alone is refused it; the one
            // open since before the reload goes on with it.
            await #expect(throws: (any Error).self) { try await get(url, with: lateClient, timeout: .seconds(1)) }
            let kept = try await get(url, with: firstClient)
            #expect(kept.0 == 200 && kept.1 == plain.text)
        }
        reload.finish()
        for client in [firstClient, secondClient, lateClient] { try await client.shutdown() }
    }

    @Test("a certificate or key that cannot be used is refused before listening, naming the file and what is wrong")
    func badFiles() async throws {
        let folder = try TemporaryFolder()
        let first = try certificate("first", in: folder.path)
        let second = try certificate("second", in: folder.path)
        let garbage = folder.path + "/garbage.pem"
        try "not a certificate\n".write(toFile: garbage, atomically: true, encoding: .utf8)
        let cases: [(String, String, String)] = [
            (folder.path + "/none.pem", first.key, "\(folder.path)/none.pem: no such file"),
            (garbage, first.key, "\(garbage): no certificate in PEM form (-----BEGIN CERTIFICATE-----) could be read"),
            (first.certificate, garbage, "\(garbage): no private key in PEM form (-----BEGIN PRIVATE KEY-----) could be read"),
            (first.certificate, second.key, "\(second.key): not the private key of the certificate in '\(first.certificate)'"),
        ]
        for (certificate, key, said) in cases {
            var options = MirrorServer.Options(output: folder.path)
            options.port = 0
            options.tls = MirrorServer.TLSFiles(certificate: certificate, key: key)
            await #expect {
                try await MirrorServer(options: options).with(logger: quiet) { _ in }
            } throws: { error in
                (error as? MirrorServer.ListenFailure)?.description == said
            }
        }
    }
}
