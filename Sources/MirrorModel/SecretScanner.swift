/// Finds the secrets of a job in text as a server may echo them: raw, percent-encoded
/// (upper or lower case hex, once or twice, or only some of the characters), form-encoded,
/// JSON-escaped, `&amp;`-escaped, or any mix of these, and the pieces a server's parser
/// cuts a secret into at `&`, `=`, `/`, spaces and the like. Built once per job: every URL,
/// validator and header kept or logged goes through it.
struct SecretScanner: Sendable {
    /// The bytes each secret and each of its fragments reads as once decoded, `+` as a
    /// space; whole secrets first, then fragments, longest first.
    private let patterns: [[UInt8]]
    /// Indexes into `patterns`, by first byte.
    private let byFirstByte: [[Int]]
    /// Bytes that start a pattern or an escape: text holding none of them holds no secret.
    private let interesting: [Bool]

    package init(secrets: [String]) {
        var patterns: [[UInt8]] = []
        var seen: Set<[UInt8]> = []
        func add(_ bytes: [UInt8]) {
            guard !bytes.isEmpty else { return }
            let normalized = Self.normalized(bytes)
            if seen.insert(normalized).inserted { patterns.append(normalized) }
        }
        let wholes = secrets.map { Array($0.utf8) }.sorted { $0.count > $1.count }
        for secret in wholes {
            add(secret)
            // A secret holding `%41` or `\n` of its own, echoed raw, reads as decoded.
            add(Self.decoded(secret).bytes)
        }
        for fragment in wholes.flatMap({ Self.fragments(of: $0) }).sorted(by: { $0.count > $1.count }) {
            add(fragment)
        }
        self.patterns = patterns
        var byFirstByte = [[Int]](repeating: [], count: 256)
        var interesting = [Bool](repeating: false, count: 256)
        for (index, pattern) in patterns.enumerated() {
            byFirstByte[Int(pattern[0])].append(index)
            interesting[Int(pattern[0])] = true
        }
        for escape in "%+\\&".utf8 { interesting[Int(escape)] = true }
        self.byFirstByte = byFirstByte
        self.interesting = interesting
    }

    /// `text` with every secret and fragment found replaced by `mask`, however it was written.
    package func mask(_ text: String, with mask: String) -> String {
        guard !patterns.isEmpty, text.utf8.contains(where: { interesting[Int($0)] }) else { return text }
        let bytes = Array(text.utf8)
        let view = Self.decoded(bytes)
        let decoded = view.bytes
        var out: [UInt8] = []
        var copied = 0
        var index = 0
        while index < decoded.count {
            let first = decoded[index]
            guard let match = byFirstByte[Int(first)].first(where: { Self.matches(patterns[$0], decoded, at: index) }) else {
                index += 1
                continue
            }
            let length = patterns[match].count
            let start = max(copied, view.starts[index])
            out.append(contentsOf: bytes[copied..<start])
            out.append(contentsOf: mask.utf8)
            copied = max(start, view.ends[index + length - 1])
            index += length
        }
        guard copied > 0 else { return text }
        out.append(contentsOf: bytes[copied...])
        return String(decoding: out, as: UTF8.self)
    }

    private static func matches(_ pattern: [UInt8], _ bytes: [UInt8], at index: Int) -> Bool {
        guard bytes.count - index >= pattern.count else { return false }
        for offset in 0 ..< pattern.count where bytes[index + offset] != pattern[offset] { return false }
        return true
    }

    /// `+` and a space are one byte to a server reading a query or a form.
    private static func normalized(_ bytes: [UInt8]) -> [UInt8] {
        bytes.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: " ") : $0 }
    }

    /// The text with its escapes decoded (`%2F` and `%252F`, `+`, JSON's `\/`, `\"`, `\u0026`
    /// and the like, `&amp;`), `+` read as a space; for each decoded byte, the range of
    /// text it came from.
    package static func decoded(_ text: [UInt8]) -> (bytes: [UInt8], starts: [Int], ends: [Int]) {
        var bytes: [UInt8] = [], starts: [Int] = [], ends: [Int] = []
        bytes.reserveCapacity(text.count)
        starts.reserveCapacity(text.count)
        ends.reserveCapacity(text.count)
        func emit(_ decoded: [UInt8], from start: Int, to end: Int) {
            for byte in decoded {
                bytes.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                starts.append(start)
                ends.append(end)
            }
        }
        func hex(_ at: Int, _ count: Int) -> UInt32? {
            guard at + count <= text.count else { return nil }
            var value: UInt32 = 0
            for byte in text[at ..< at + count] {
                guard let digit = hexDigit(byte) else { return nil }
                value = value << 4 | UInt32(digit)
            }
            return value
        }
        var index = 0
        while index < text.count {
            let byte = text[index]
            switch byte {
            case UInt8(ascii: "%"):
                if let value = hex(index + 1, 2) {
                    // `%25` followed by two hex digits: encoded twice.
                    if value == 0x25, let inner = hex(index + 3, 2) {
                        emit([UInt8(inner)], from: index, to: index + 5)
                        index += 5
                    } else {
                        emit([UInt8(value)], from: index, to: index + 3)
                        index += 3
                    }
                    continue
                }
            case UInt8(ascii: "\\") where index + 1 < text.count:
                let next = text[index + 1]
                if let value = jsonEscapes[Int(next)] {
                    emit([value], from: index, to: index + 2)
                    index += 2
                    continue
                }
                if next == UInt8(ascii: "u"), let unit = hex(index + 2, 4) {
                    var scalar = Unicode.Scalar(unit)
                    var length = 6
                    if (0xD800 ..< 0xDC00).contains(unit), index + 12 <= text.count, text[index + 6] == UInt8(ascii: "\\"),
                       text[index + 7] == UInt8(ascii: "u"), let low = hex(index + 8, 4), (0xDC00 ..< 0xE000).contains(low) {
                        scalar = Unicode.Scalar(0x10000 + (unit - 0xD800) << 10 + (low - 0xDC00))
                        length = 12
                    }
                    if let scalar {
                        emit(Array(String(scalar).utf8), from: index, to: index + length)
                        index += length
                        continue
                    }
                }
            case UInt8(ascii: "&") where text[index...].starts(with: "&amp;".utf8):
                emit([UInt8(ascii: "&")], from: index, to: index + 5)
                index += 5
                continue
            default:
                break
            }
            emit([byte], from: index, to: index + 1)
            index += 1
        }
        return (bytes, starts, ends)
    }

    /// What JSON's two-character escapes (`\n`, `\/`) stand for, by their second character.
    private static let jsonEscapes: [UInt8?] = {
        var table = [UInt8?](repeating: nil, count: 256)
        for (escape, value) in zip("\"\\/bfnrt".utf8, [0x22, 0x5C, 0x2F, 0x08, 0x0C, 0x0A, 0x0D, 0x09] as [UInt8]) {
            table[Int(escape)] = value
        }
        return table
    }()

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0") ... UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a") ... UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A") ... UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Where a server's parser cuts a value: a query's and a form's `&`, `=` and `;`, a
    /// path's `/`, a URL's `?`, `#`, `@` and `:`, a header list's `,`, spaces and `+`.
    package static let cuts: Set<UInt8> = Set("&=;/?#@:, +".utf8)

    /// A fragment shorter than this is left alone: it would mask half of every URL.
    static let shortestFragment = 4

    /// The pieces a parser may cut `secret` into (a run from the start or a cut to a cut or
    /// the end, neither starting nor ending with a cut), of at least `shortestFragment` bytes
    /// and not a common word.
    static func fragments(of secret: [UInt8]) -> [[UInt8]] {
        let cutAt = secret.indices.filter { cuts.contains(secret[$0]) }
        guard !cutAt.isEmpty else { return [] }
        // A secret with very many cuts: the pieces between neighbouring cuts and the runs to
        // either end are enough.
        let starts = [0] + cutAt.map { $0 + 1 }, ends = cutAt + [secret.count]
        let wide = cutAt.count <= 32
        var fragments: [[UInt8]] = []
        for (i, start) in starts.enumerated() {
            for (j, end) in ends.enumerated() where j >= i && (wide || j == i || start == 0 || end == secret.count) {
                guard end - start >= shortestFragment, end - start < secret.count,
                      !cuts.contains(secret[start]), !cuts.contains(secret[end - 1]) else { continue }
                let piece = Array(secret[start ..< end])
                if !commonWords.contains(String(decoding: piece, as: UTF8.self).lowercased()) {
                    fragments.append(piece)
                }
            }
        }
        return fragments
    }

    /// Words a URL, a header or a response is full of: a secret's fragment that is one of
    /// them is not masked, or no URL would be readable.
    static let commonWords: Set<String> = [
        "about", "access", "account", "after", "all", "and", "api", "asc", "auth", "before", "bearer", "body", "count",
        "cursor", "data", "date", "default", "desc", "email", "end", "false", "fields", "file", "files", "filter", "first",
        "format", "from", "have", "host", "html", "http", "https", "id", "ids", "include", "index", "item", "items",
        "json", "key", "keys", "last", "limit", "list", "login", "more", "name", "next", "none", "null", "offset",
        "order", "page", "pages", "pass", "password", "prev", "previous", "query", "search", "secret", "since", "size",
        "sort", "start", "step", "test", "text", "that", "this", "time", "token", "total", "true", "type", "until",
        "user", "users", "value", "version", "what", "when", "where", "with", "word", "www", "your",
    ]
}
