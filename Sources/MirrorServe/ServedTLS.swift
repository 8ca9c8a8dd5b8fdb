import Foundation
import Logging
import NIOSSL
import Synchronization

/// The certificate and key `mirror serve` answers TLS with (`--tls-cert`, `--tls-key`), read
/// again on a reload (SIGHUP): a connection takes the context that is current when it is
/// accepted and keeps it, so the connections open when the files change go on unchanged.
final class ServedTLS: Sendable {
    let files: MirrorServer.TLSFiles
    private let current: Mutex<NIOSSLContext>

    /// Reads both files; a file that cannot be used is `FILE: what is wrong`.
    init(_ files: MirrorServer.TLSFiles) throws(MirrorServer.ListenFailure) {
        self.files = files
        current = Mutex(try Self.context(files))
    }

    /// The context a connection accepted now is served with.
    var context: NIOSSLContext {
        current.withLock { $0 }
    }

    /// Reads both files again; when either cannot be used, the connections go on with the
    /// certificate they had, and the reason is logged.
    func reload(logger: Logger) {
        do {
            let context = try Self.context(files)
            current.withLock { $0 = context }
            logger.info("certificate read again", metadata: ["file": "\(files.certificate)"])
        } catch {
            logger.error("certificate not read again; the previous one is served", metadata: ["reason": "\(error)"])
        }
    }

    /// A server context of the certificate chain in `files.certificate` and the key in
    /// `files.key`, both PEM.
    static func context(_ files: MirrorServer.TLSFiles) throws(MirrorServer.ListenFailure) -> NIOSSLContext {
        let chainBytes = try read(files.certificate)
        let keyBytes = try read(files.key)
        guard let chain = try? NIOSSLCertificate.fromPEMBytes(chainBytes), !chain.isEmpty else {
            throw failure(files.certificate, "no certificate in PEM form (-----BEGIN CERTIFICATE-----) could be read")
        }
        guard let key = try? NIOSSLPrivateKey(bytes: keyBytes, format: .pem) else {
            throw failure(files.key, "no private key in PEM form (-----BEGIN PRIVATE KEY-----) could be read")
        }
        let configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            // BoringSSL refuses a key that is not the certificate's.
            throw failure(files.key, "not the private key of the certificate in '\(files.certificate)'")
        }
    }

    private static func read(_ path: String) throws(MirrorServer.ListenFailure) -> [UInt8] {
        guard FileManager.default.fileExists(atPath: path) else { throw failure(path, "no such file") }
        guard let data = FileManager.default.contents(atPath: path) else { throw failure(path, "cannot be read (permissions?)") }
        return Array(data)
    }

    private static func failure(_ path: String, _ problem: String) -> MirrorServer.ListenFailure {
        MirrorServer.ListenFailure(description: "\(path): \(problem)")
    }
}
