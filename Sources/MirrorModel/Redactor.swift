import Foundation
import Synchronization

/// Knows every value that came from `${…}` in a job file and blanks it out of any text
/// meant for people or for files: logs, errors, reports, stored URLs. It prints, dumps and
/// reflects as the names of its secrets only.
package struct Redactor: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// A value that came from `${name}`. Only the HTTP layer reads its value; printed,
    /// dumped or reflected, it shows its name and a mask.
    package struct Secret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        package let name: String
        package let value: String

        package init(name: String, value: String) {
            self.name = name
            self.value = value
        }

        package var description: String { "${\(name)}=\(Redactor.mask)" }
        package var debugDescription: String { description }
        package var customMirror: Mirror { Mirror(self, children: ["name": name, "value": Redactor.mask]) }
    }

    package static let mask = "REDACTED"
    package static let none = Redactor(secrets: [])

    /// Longest first, so a secret that contains another is masked whole.
    private let secrets: [Secret]
    /// Finds every form of every secret and of its fragments: worked out once, since every
    /// URL a walk makes is redacted.
    private let scanner: SecretScanner
    /// Tokens fetched while the program runs (`auth`), masked beside the secrets.
    private let fetched: [FetchedSecrets]

    package init(secrets: some Sequence<Secret>, fetched: [FetchedSecrets] = []) {
        self.fetched = fetched
        self.secrets = Set(secrets.filter { !$0.value.isEmpty }).sorted {
            $0.value.count != $1.value.count ? $0.value.count > $1.value.count : $0.name < $1.name
        }
        scanner = SecretScanner(secrets: self.secrets.map(\.value))
    }

    package static func == (lhs: Redactor, rhs: Redactor) -> Bool {
        lhs.secrets == rhs.secrets && lhs.fetched.map(ObjectIdentifier.init) == rhs.fetched.map(ObjectIdentifier.init)
    }

    package var isEmpty: Bool { secrets.isEmpty && fetched.isEmpty }

    package var description: String { "Redactor(\(secrets.map(\.name).sorted().joined(separator: ", ")))" }
    package var debugDescription: String { description }
    package var customMirror: Mirror { Mirror(self, children: ["secrets": secrets.map(\.name).sorted()]) }

    /// Whether `text` holds a secret, in any form this redactor masks.
    package func holdsSecret(_ text: String) -> Bool { redact(text) != text }

    /// The text with every secret masked in any form a server may echo it: raw, percent-,
    /// form- or JSON-encoded, any mix of these, or cut into fragments (see `SecretScanner`).
    package func redact(_ text: String) -> String {
        let masked = secrets.isEmpty ? text : scanner.mask(text, with: Self.mask)
        return fetched.reduce(masked) { $1.mask($0) }
    }

    /// The text with each secret written as `${NAME}`: safe to store, and `expand` gives
    /// the text back. Nil when a secret appears in a form that `${NAME}` cannot stand for
    /// (encoded, escaped), and when the text holds a `${` of its own, which `expand` would
    /// fill with a secret.
    package func placeholders(_ text: String) -> String? {
        guard !text.contains("${") else { return nil }
        var text = text
        for secret in secrets {
            text = text.replacingAll(secret.value, with: "${\(secret.name)}")
        }
        let decoded = (text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? text)
        guard redact(text) == text, !secrets.contains(where: { decoded.contains($0.value) }) else { return nil }
        return text
    }

    /// Puts back the secrets that `placeholders` wrote as `${NAME}`.
    package func expand(_ text: String) -> String {
        guard text.contains("${") else { return text }
        var text = text
        for secret in secrets {
            text = text.replacingAll("${\(secret.name)}", with: secret.value)
        }
        return text
    }

    package func merged(with other: Redactor) -> Redactor {
        Redactor(secrets: secrets + other.secrets, fetched: fetched + other.fetched.filter { box in
            !fetched.contains { $0 === box }
        })
    }

    /// This redactor, masking the tokens `box` will hold too.
    package func watching(_ box: FetchedSecrets) -> Redactor {
        fetched.contains { $0 === box } ? self : Redactor(secrets: secrets, fetched: fetched + [box])
    }
}

/// The tokens an auth definition fetched while the program runs (the keys of `${…}` are
/// known when the job file is read; these only once a token endpoint has answered): every
/// job using the definition masks them, raw, percent-encoded or form-encoded, wherever its
/// redactor masks secrets. The last few are kept: older ones have long expired.
package final class FetchedSecrets: Sendable {
    private let values = Mutex<[String]>([])
    private static let kept = 16

    package init() {}

    package func add(_ token: String) {
        guard !token.isEmpty else { return }
        values.withLock { values in
            guard !values.contains(token) else { return }
            values.append(token)
            if values.count > Self.kept { values.removeFirst() }
        }
    }

    package func mask(_ text: String) -> String {
        let tokens = values.withLock { $0 }
        var text = text
        for token in tokens {
            for form in Set([token, token.addingPercentEncodingForQuery(), token.addingPercentEncodingForQuery().replacingAll("%20", with: "+")]) {
                text = text.replacingAll(form, with: Redactor.mask)
            }
        }
        return text
    }
}

/// Text that may hold a secret (a header value, a request body, a validator a server
/// sent): used as it is inside the library, printed, dumped and reflected only redacted.
package struct RedactedText: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The text as sent. Internal on purpose.
    package let real: String
    /// The text with every secret masked.
    package let description: String

    package init(real: String, redactor: Redactor) {
        self.real = real
        description = redactor.redact(real)
    }

    /// Whether the text holds a secret.
    package var holdsSecret: Bool { real != description }

    package var debugDescription: String { description }
    package var customMirror: Mirror { Mirror(self, children: ["text": description]) }

    package static func == (lhs: RedactedText, rhs: RedactedText) -> Bool { lhs.real == rhs.real }
    package func hash(into hasher: inout Hasher) { hasher.combine(real) }
}

/// A request header whose value may hold a secret.
package struct Header: Sendable {
    package let name: String
    package let value: RedactedText

    package init(name: String, value: RedactedText) {
        self.name = name
        self.value = value
    }
}

/// A URL that prints only in its redacted form: the real text is reachable only inside
/// the HTTP layer, so an error or a log line cannot carry a secret by accident.
package struct RedactedURL: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The URL as sent on the wire. Internal on purpose.
    package let real: String
    /// The URL with every secret masked: what logs, errors and the store see.
    package let description: String

    /// A URL that came from outside the job file (a next link): any secret it echoes is masked.
    package init(real: String, redactor: Redactor) {
        self.real = real
        self.description = redactor.redact(real)
    }

    /// A URL built from a template whose masked form is known exactly.
    package init(real: String, shown: String) {
        self.real = real
        self.description = shown
    }

    /// `host:port` as the rate limit counts it (secrets do not live there).
    package var host: String {
        guard let components = URLComponents(string: real) else { return "" }
        let port = components.port ?? (components.scheme?.lowercased() == "https" ? 443 : 80)
        return "\(components.host?.lowercased() ?? ""):\(port)"
    }

    package var debugDescription: String { description }
    package var customMirror: Mirror { Mirror(self, children: ["url": description]) }

    /// The masked URL for a message or a log line: one of thousands of characters is cut.
    package var shortDescription: String { description.cutForMessage() }

    package static func == (lhs: RedactedURL, rhs: RedactedURL) -> Bool { lhs.real == rhs.real }
    package func hash(into hasher: inout Hasher) { hasher.combine(real) }
}

extension String {
    /// Every occurrence of `target`'s bytes replaced, left to right. A byte search: the same
    /// UTF-8 bytes match, whatever the grapheme boundaries around them (a secret's bytes are
    /// masked wherever they are), and a URL of a walk is filled without Foundation's
    /// locale-aware search.
    package func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var text = self
        var needle = target
        return text.withUTF8 { text in
            needle.withUTF8 { needle in
                var result: [UInt8] = []
                var copied = 0
                var start = 0
                let first = needle[0], last = text.count - needle.count
                while start <= last {
                    guard text[start] == first, text[start + 1 ..< start + needle.count].elementsEqual(needle[1...]) else {
                        start += 1
                        continue
                    }
                    if result.isEmpty { result.reserveCapacity(text.count + replacement.utf8.count) }
                    result.append(contentsOf: text[copied ..< start])
                    result.append(contentsOf: replacement.utf8)
                    start += needle.count
                    copied = start
                }
                guard copied > 0 else { return self }
                result.append(contentsOf: text[copied...])
                return String(decoding: result, as: UTF8.self)
            }
        }
    }

    /// Percent-encodes everything but RFC 3986 unreserved characters.
    /// Text from a server (a URL, a cursor) as a message quotes it: at most 500 characters,
    /// the rest said in a count, so that a 10 MB URL does not fill a log or a cron mail.
    package func cutForMessage(limit: Int = 500) -> String {
        guard utf8.count > limit else { return self }
        let head = String(decoding: utf8.prefix(limit), as: UTF8.self)
        return head + "… (\(utf8.count - limit) more bytes)"
    }

    package func addingPercentEncodingForQuery() -> String {
        var out = ""
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                out += "%"
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 0xF)]))
            }
        }
        return out
    }
}
