import Crypto
import Foundation
import _CryptoExtras

/// Makes JSON Web Tokens (RFC 7519, compact JWS) signed with RS256 (RSASSA-PKCS1-v1_5 with
/// SHA-256) or ES256 (ECDSA on P-256 with SHA-256, the signature as `r || s`, 64 bytes,
/// RFC 7518 section 3.4), with swift-crypto and its `_CryptoExtras`, which mirror's build
/// already compiled and linked (with swift-certificates) before. vapor/jwt-kit 5.8.0 was
/// measured instead: in a scratch package it added 90-100 s of CPU to a clean debug build,
/// 140-180 s to a release one and 3.5 MB to the stripped release binary, and it needs
/// swift-crypto 4, where mirror is on 3.12.3.
///
/// The header is `{"alg":…,"kid":…,"typ":"JWT"}`, its names in that (sorted) order, as PyJWT
/// writes it; the claims go in as the bytes given. Holds the private key: it prints, dumps
/// and reflects as its algorithm and key id only, and no error it throws quotes the key.
package struct JWTSigner: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    package enum Algorithm: String, Sendable {
        case rs256 = "RS256"
        case es256 = "ES256"
    }

    private enum Key: Sendable {
        case rsa(_RSA.Signing.PrivateKey)
        /// The scalar (`rawRepresentation`): swift-crypto's P-256 key is not `Sendable`.
        case p256(Data)
    }

    package let algorithm: Algorithm
    package let keyID: String?
    private let key: Key
    /// The header, base64url-encoded: the same for every token.
    private let encodedHeader: String

    /// PEM: PKCS#8 "PRIVATE KEY", PKCS#1 "RSA PRIVATE KEY" (GitHub Apps hand these out), SEC1
    /// "EC PRIVATE KEY". Throws a clear error naming what is wrong (never the key's bytes).
    package init(algorithm: Algorithm, privateKeyPEM: String, keyID: String?) throws {
        let block = try PEMBlock(privateKeyPEM)
        self.algorithm = algorithm
        self.keyID = keyID
        switch algorithm {
        case .rs256:
            key = .rsa(try Self.rsaKey(block))
        case .es256:
            key = .p256(try Self.p256Key(block).rawRepresentation)
        }
        var header = #"{"alg":"\#(algorithm.rawValue)""#
        if let keyID { header += #","kid":"# + Self.jsonString(keyID) }
        header += #","typ":"JWT"}"#
        encodedHeader = Self.base64URL(Array(header.utf8))
    }

    /// header.payload.signature, base64url without padding; `claims` is the payload's JSON
    /// object text, already serialised.
    package func token(claims: [UInt8]) throws -> String {
        let signingInput = encodedHeader + "." + Self.base64URL(claims)
        let signature: Data
        do {
            switch key {
            case let .rsa(key):
                signature = try key.signature(for: Array(signingInput.utf8), padding: .insecurePKCS1v1_5).rawRepresentation
            case let .p256(scalar):
                let key = try P256.Signing.PrivateKey(rawRepresentation: scalar)
                signature = try key.signature(for: Array(signingInput.utf8)).rawRepresentation
            }
        } catch {
            throw JWTSignerError(.signingFailed(algorithm))
        }
        return signingInput + "." + Self.base64URL(Array(signature))
    }

    package var description: String {
        "JWTSigner(algorithm: \(algorithm.rawValue)\(keyID.map { ", keyID: \($0)" } ?? ""))"
    }
    package var debugDescription: String { description }
    package var customMirror: Mirror {
        Mirror(self, children: ["algorithm": algorithm.rawValue, "keyID": keyID as Any])
    }

    private static func rsaKey(_ block: PEMBlock) throws -> _RSA.Signing.PrivateKey {
        switch block.label {
        case "EC PRIVATE KEY": throw JWTSignerError(.wrongKeyType(.rs256, found: "an EC key", label: block.label))
        case "RSA PRIVATE KEY", "PRIVATE KEY": break
        default: throw JWTSignerError(.unsupportedFormat(block.label))
        }
        // The unchecked reader takes keys of 1024 bits or more, so that a short one is named as such.
        guard let key = try? _RSA.Signing.PrivateKey(unsafePEMRepresentation: block.pem) else {
            if block.label == "PRIVATE KEY", (try? P256.Signing.PrivateKey(pemRepresentation: block.pem)) != nil
                || (try? P384.Signing.PrivateKey(pemRepresentation: block.pem)) != nil
                || (try? P521.Signing.PrivateKey(pemRepresentation: block.pem)) != nil
            {
                throw JWTSignerError(.wrongKeyType(.rs256, found: "an EC key", label: block.label))
            }
            throw JWTSignerError(.unreadable(.rs256, label: block.label))
        }
        guard key.keySizeInBits >= 2048 else { throw JWTSignerError(.rsaTooShort(bits: key.keySizeInBits)) }
        return key
    }

    private static func p256Key(_ block: PEMBlock) throws -> P256.Signing.PrivateKey {
        switch block.label {
        case "RSA PRIVATE KEY": throw JWTSignerError(.wrongKeyType(.es256, found: "an RSA key", label: block.label))
        case "EC PRIVATE KEY", "PRIVATE KEY": break
        default: throw JWTSignerError(.unsupportedFormat(block.label))
        }
        if let key = try? P256.Signing.PrivateKey(pemRepresentation: block.pem) { return key }
        if (try? P384.Signing.PrivateKey(pemRepresentation: block.pem)) != nil {
            throw JWTSignerError(.wrongKeyType(.es256, found: "an EC key on curve P-384", label: block.label))
        }
        if (try? P521.Signing.PrivateKey(pemRepresentation: block.pem)) != nil {
            throw JWTSignerError(.wrongKeyType(.es256, found: "an EC key on curve P-521", label: block.label))
        }
        if block.label == "PRIVATE KEY", (try? _RSA.Signing.PrivateKey(unsafePEMRepresentation: block.pem)) != nil {
            throw JWTSignerError(.wrongKeyType(.es256, found: "an RSA key", label: block.label))
        }
        throw JWTSignerError(.unreadable(.es256, label: block.label))
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        while text.last == "=" { text.removeLast() }
        return String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
    }

    /// A JSON string literal, escaped as Python's `json.dumps` escapes ASCII text.
    static func jsonString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case ..."\u{1F}": out += "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// Why a private key cannot sign, or a token could not be made. Its description names the
/// PEM label, the algorithm and what was expected, never a byte of the key.
package struct JWTSignerError: Error, Sendable, Equatable, CustomStringConvertible {
    fileprivate enum Code: Sendable, Equatable {
        case noPEM
        case notPrivateKey(String)
        case unsupportedFormat(String)
        case encrypted(String)
        case unterminated(String)
        case wrongKeyType(JWTSigner.Algorithm, found: String, label: String)
        case rsaTooShort(bits: Int)
        case unreadable(JWTSigner.Algorithm, label: String)
        case signingFailed(JWTSigner.Algorithm)
    }

    private let code: Code

    fileprivate init(_ code: Code) {
        self.code = code
    }

    package var description: String {
        let expected = "'PRIVATE KEY' (PKCS#8), 'RSA PRIVATE KEY' (PKCS#1) or 'EC PRIVATE KEY' (SEC1)"
        switch code {
        case .noPEM:
            return "the private key is not PEM text: no '-----BEGIN …-----' line was found; expected \(expected)"
        case let .notPrivateKey(label):
            return "the PEM holds '\(label)', not a private key; expected \(expected)"
        case let .unsupportedFormat(label):
            return "the PEM '\(label)' is a private key in a format this does not read; expected \(expected)"
        case let .encrypted(label):
            return "the private key '\(label)' is encrypted; give it unencrypted (openssl pkcs8 -topk8 -nocrypt)"
        case let .unterminated(label):
            return "the PEM '\(label)' has no '-----END \(label)-----' line"
        case let .wrongKeyType(algorithm, found, label):
            let wanted = algorithm == .rs256 ? "an RSA private key" : "an EC private key on curve P-256"
            return "\(algorithm.rawValue) needs \(wanted), but the PEM '\(label)' holds \(found)"
        case let .rsaTooShort(bits):
            return "RS256 needs an RSA key of at least 2048 bits, not \(bits)"
        case let .unreadable(algorithm, label):
            let wanted = algorithm == .rs256 ? "an RSA private key" : "an EC private key"
            return "the PEM '\(label)' cannot be read as \(wanted): its base64 or DER is damaged"
        case let .signingFailed(algorithm):
            return "signing a \(algorithm.rawValue) token failed"
        }
    }
}

/// The first private-key block of PEM text, rewrapped for the readers: its label, and the
/// block alone with `\r` gone and its base64 in lines of 64.
private struct PEMBlock {
    let label: String
    let pem: String

    init(_ text: String) throws {
        let lines = text.split(omittingEmptySubsequences: true) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        var labels: [String] = []
        var index = 0
        while index < lines.count {
            defer { index += 1 }
            guard let label = Self.label(lines[index], "BEGIN") else { continue }
            labels.append(label)
            guard label.hasSuffix("PRIVATE KEY") else { continue }
            guard label != "ENCRYPTED PRIVATE KEY" else { throw JWTSignerError(.encrypted(label)) }
            var body: [String] = []
            var end = index + 1
            while end < lines.count, Self.label(lines[end], "END") == nil {
                body.append(lines[end])
                end += 1
            }
            // A PKCS#1 or SEC1 key encrypted the traditional way says so in a header line.
            guard !body.contains(where: { $0.hasPrefix("Proc-Type:") && $0.contains("ENCRYPTED") }) else {
                throw JWTSignerError(.encrypted(label))
            }
            guard end < lines.count, Self.label(lines[end], "END") == label else {
                throw JWTSignerError(.unterminated(label))
            }
            let base64 = body.joined()
            var wrapped: [Substring] = []
            var rest = Substring(base64)
            while !rest.isEmpty {
                wrapped.append(rest.prefix(64))
                rest = rest.dropFirst(64)
            }
            self.label = label
            pem = (["-----BEGIN \(label)-----"] + wrapped.map(String.init) + ["-----END \(label)-----"]).joined(separator: "\n")
            return
        }
        if let first = labels.first { throw JWTSignerError(.notPrivateKey(first)) }
        throw JWTSignerError(.noPEM)
    }

    /// `RSA PRIVATE KEY` from `-----BEGIN RSA PRIVATE KEY-----`.
    private static func label(_ line: String, _ kind: String) -> String? {
        let prefix = "-----\(kind) ", suffix = "-----"
        guard line.hasPrefix(prefix), line.hasSuffix(suffix), line.count >= prefix.count + suffix.count else { return nil }
        return String(line.dropFirst(prefix.count).dropLast(suffix.count))
    }
}
