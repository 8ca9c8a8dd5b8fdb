import Crypto
import Foundation
@testable import MirrorHTTP
import Testing
import _CryptoExtras

/// Test keys made once with OpenSSL (scripts/check/jwt-crosscheck.py says how), and tokens PyJWT
/// made from them (Fixtures/jwt-pyjwt.json, written by that script).
private let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

private func pem(_ name: String) -> String {
    (try? String(contentsOf: fixtures.appendingPathComponent("jwt/\(name)"), encoding: .utf8)) ?? ""
}

private struct PyJWTToken: Decodable, Sendable, CustomTestStringConvertible {
    let name: String
    let algorithm: String
    let key: String
    let publicKey: String
    let keyID: String?
    let claims: String
    let token: String

    enum CodingKeys: String, CodingKey {
        case name, algorithm, key, claims, token
        case publicKey = "public_key", keyID = "key_id"
    }

    var testDescription: String { name }
}

private let pyjwtTokens: [PyJWTToken] = {
    guard let data = FileManager.default.contents(atPath: fixtures.appendingPathComponent("jwt-pyjwt.json").path) else { return [] }
    return (try? JSONDecoder().decode([PyJWTToken].self, from: data)) ?? []
}()

private func base64URLDecoded(_ text: Substring) -> [UInt8]? {
    var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
    return Data(base64Encoded: base64).map(Array.init)
}

/// Whether `token`'s signature is valid for its first two parts under the public key.
private func verifies(_ token: String, algorithm: JWTSigner.Algorithm, publicKeyPEM: String) throws -> Bool {
    let parts = token.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 3, let signature = base64URLDecoded(parts[2]) else { return false }
    let signed = Array("\(parts[0]).\(parts[1])".utf8)
    switch algorithm {
    case .rs256:
        let key = try _RSA.Signing.PublicKey(pemRepresentation: publicKeyPEM)
        return key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: signed, padding: .insecurePKCS1v1_5)
    case .es256:
        guard signature.count == 64 else { return false }
        let key = try P256.Signing.PublicKey(pemRepresentation: publicKeyPEM)
        return key.isValidSignature(try P256.Signing.ECDSASignature(rawRepresentation: signature), for: signed)
    }
}

private func failure(_ algorithm: JWTSigner.Algorithm, _ pem: String) -> String? {
    do {
        _ = try JWTSigner(algorithm: algorithm, privateKeyPEM: pem, keyID: nil)
        return nil
    } catch {
        return "\(error)"
    }
}

@Suite("JSON Web Token signer", .timeLimit(.minutes(6)))
struct JWTSignerTests {
    @Test("PyJWT's fixture holds tokens of both algorithms")
    func fixture() {
        #expect(pyjwtTokens.count == 7)
        #expect(Set(pyjwtTokens.map(\.algorithm)) == ["RS256", "ES256"])
    }

    @Test("a token is PyJWT's, byte for byte for RS256, and verifies with the public key", arguments: pyjwtTokens)
    fileprivate func sameAsPyJWT(_ expected: PyJWTToken) throws {
        let algorithm = try #require(JWTSigner.Algorithm(rawValue: expected.algorithm))
        let signer = try JWTSigner(algorithm: algorithm, privateKeyPEM: pem(expected.key), keyID: expected.keyID)
        let token = try signer.token(claims: Array(expected.claims.utf8))
        switch algorithm {
        case .rs256:
            #expect(token == expected.token)
        case .es256:
            // ECDSA signs with a random nonce: the signed parts match, the signatures differ.
            #expect(token.split(separator: ".").prefix(2) == expected.token.split(separator: ".").prefix(2))
            #expect(try verifies(expected.token, algorithm: .es256, publicKeyPEM: pem(expected.publicKey)))
            #expect(base64URLDecoded(token.split(separator: ".")[2])?.count == 64)
        }
        #expect(try verifies(token, algorithm: algorithm, publicKeyPEM: pem(expected.publicKey)))
        #expect(base64URLDecoded(token.split(separator: ".")[1]) == Array(expected.claims.utf8))
        #expect(!token.contains("=") && !token.contains("+") && !token.contains("/"))
    }

    @Test("a token signed with another key does not verify")
    func otherKey() throws {
        let token = try JWTSigner(algorithm: .es256, privateKeyPEM: pem("ec-sec1.pem"), keyID: nil).token(claims: Array("{}".utf8))
        #expect(try verifies(token, algorithm: .es256, publicKeyPEM: pem("ec-public.pem")))
        let other = P256.Signing.PrivateKey().publicKey.pemRepresentation
        #expect(try !verifies(token, algorithm: .es256, publicKeyPEM: other))
        let tampered = token.replacingOccurrences(of: ".e30.", with: ".e31.")
        #expect(try !verifies(tampered, algorithm: .es256, publicKeyPEM: pem("ec-public.pem")))
    }

    @Test("the key is found among other PEM blocks and text, with CRLF line ends and indented lines")
    func pemAmongOthers() throws {
        let mixed = "GitHub App key, downloaded 2026-11-20\r\n" + pem("rsa-public.pem").replacingOccurrences(of: "\n", with: "\r\n")
            + pem("rsa-pkcs1.pem").split(separator: "\n").map { "  \($0)" }.joined(separator: "\r\n") + "\r\n"
        let expected = try #require(pyjwtTokens.first { $0.name == "rs256-pkcs1-github-app" })
        let token = try JWTSigner(algorithm: .rs256, privateKeyPEM: mixed, keyID: nil).token(claims: Array(expected.claims.utf8))
        #expect(token == expected.token)
    }

    @Test("a key that cannot sign is refused with a sentence naming what is wrong")
    func refused() {
        let expected = "'PRIVATE KEY' (PKCS#8), 'RSA PRIVATE KEY' (PKCS#1) or 'EC PRIVATE KEY' (SEC1)"
        #expect(failure(.rs256, "") == "the private key is not PEM text: no '-----BEGIN …-----' line was found; expected \(expected)")
        #expect(failure(.rs256, "MIIEowIBAAKCAQEA") == "the private key is not PEM text: no '-----BEGIN …-----' line was found; expected \(expected)")
        #expect(failure(.rs256, pem("rsa-public.pem")) == "the PEM holds 'PUBLIC KEY', not a private key; expected \(expected)")
        let openSSH = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
        #expect(failure(.es256, openSSH) == "the PEM 'OPENSSH PRIVATE KEY' is a private key in a format this does not read; expected \(expected)")
        #expect(failure(.es256, pem("ec-encrypted.pem")) == "the private key 'ENCRYPTED PRIVATE KEY' is encrypted; give it unencrypted (openssl pkcs8 -topk8 -nocrypt)")
        #expect(failure(.rs256, pem("ec-sec1.pem")) == "RS256 needs an RSA private key, but the PEM 'EC PRIVATE KEY' holds an EC key")
        #expect(failure(.rs256, pem("ec-pkcs8.pem")) == "RS256 needs an RSA private key, but the PEM 'PRIVATE KEY' holds an EC key")
        #expect(failure(.es256, pem("rsa-pkcs1.pem")) == "ES256 needs an EC private key on curve P-256, but the PEM 'RSA PRIVATE KEY' holds an RSA key")
        #expect(failure(.es256, pem("rsa-pkcs8.pem")) == "ES256 needs an EC private key on curve P-256, but the PEM 'PRIVATE KEY' holds an RSA key")
        #expect(failure(.es256, pem("ec-p384-sec1.pem")) == "ES256 needs an EC private key on curve P-256, but the PEM 'EC PRIVATE KEY' holds an EC key on curve P-384")
        #expect(failure(.rs256, pem("rsa-1024-pkcs1.pem")) == "RS256 needs an RSA key of at least 2048 bits, not 1024")

        var lines = pem("rsa-pkcs1.pem").split(separator: "\n").map(String.init)
        lines[3] = "!!!!" + lines[3].dropFirst(4)
        #expect(failure(.rs256, lines.joined(separator: "\n")) == "the PEM 'RSA PRIVATE KEY' cannot be read as an RSA private key: its base64 or DER is damaged")
        let cut = pem("ec-sec1.pem").split(separator: "\n").dropLast().joined(separator: "\n")
        #expect(failure(.es256, cut) == "the PEM 'EC PRIVATE KEY' has no '-----END EC PRIVATE KEY-----' line")
        let traditional = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----\n"
        #expect(failure(.rs256, traditional) == "the private key 'RSA PRIVATE KEY' is encrypted; give it unencrypted (openssl pkcs8 -topk8 -nocrypt)")
    }

    @Test("no error, description or dump holds a byte of the key")
    func noKeyBytes() throws {
        let bodies = ["rsa-pkcs1.pem", "ec-sec1.pem", "ec-p384-sec1.pem", "rsa-1024-pkcs1.pem"].flatMap { name in
            pem(name).split(separator: "\n").filter { !$0.hasPrefix("-----") }.map { String($0.prefix(24)) }
        }
        var texts = [
            failure(.rs256, pem("ec-sec1.pem")), failure(.es256, pem("ec-p384-sec1.pem")), failure(.rs256, pem("rsa-1024-pkcs1.pem")),
        ].compactMap { $0 }
        let signer = try JWTSigner(algorithm: .rs256, privateKeyPEM: pem("rsa-pkcs1.pem"), keyID: "k1")
        var dumped = ""
        dump(signer, to: &dumped)
        texts += [String(describing: signer), String(reflecting: signer), dumped]
        #expect(String(describing: signer) == "JWTSigner(algorithm: RS256, keyID: k1)")
        for text in texts {
            for body in bodies { #expect(!text.contains(body)) }
        }
    }

    @Test("the key id is escaped as JSON")
    func keyIDEscaped() {
        #expect(JWTSigner.jsonString("a\"b\\c\n\u{1}é") == #""a\"b\\c\n\u0001é""#)
    }
}
