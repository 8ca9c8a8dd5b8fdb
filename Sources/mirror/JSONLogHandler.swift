import Foundation
import Logging
import MirrorJSON
import MirrorModel

/// One JSON object a line on stderr, for a log pipeline:
/// `{"time":"2026-11-29T23:10:00.123Z","level":"info","message":"job done","job":"events","pages":3,"stop":"empty page 3"}`.
/// `time` (UTC, milliseconds), `level` and `message` first, then the event's metadata in key
/// order, so the same event always reads the same. A value is the text the plain line shows
/// (the same already-redacted message and metadata), as a JSON string; a count (`countKeys`)
/// whose text is a whole number is a JSON number.
struct JSONLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    /// The keys whose values are counts or numbers: `page=3` is `"page":3`.
    static let countKeys: Set<String> = ["attempt", "bytes", "databases", "files", "http.status", "missing", "new", "page",
                                         "pages", "records", "unchanged"]
    /// Written first; metadata of the same name is left out (mirror logs none).
    private static let fixedKeys: Set<String> = ["time", "level", "message"]

    init(logLevel: Logger.Level) {
        self.logLevel = logLevel
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        FileHandle.standardError.write(Data(Self.line(time: Date(), level: event.level, message: "\(event.message)", metadata: merged)))
    }

    /// The event's line, its newline included.
    static func line(time: Date, level: Logger.Level, message: String, metadata: Logger.Metadata) -> [UInt8] {
        var out: [UInt8] = []
        out.append(contentsOf: #"{"time":"#.utf8)
        JSONText.appendQuoted(Timestamp.string(time), to: &out)
        out.append(contentsOf: #","level":"#.utf8)
        JSONText.appendQuoted(level.rawValue, to: &out)
        out.append(contentsOf: #","message":"#.utf8)
        JSONText.appendQuoted(message, to: &out)
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) where !fixedKeys.contains(key) {
            out.append(UInt8(ascii: ","))
            JSONText.appendQuoted(key, to: &out)
            out.append(UInt8(ascii: ":"))
            append(value, count: countKeys.contains(key), to: &out)
        }
        out.append(contentsOf: "}\n".utf8)
        return out
    }

    private static func append(_ value: Logger.Metadata.Value, count: Bool, to out: inout [UInt8]) {
        switch value {
        case let .string(text):
            if count, isWholeNumber(text) { out.append(contentsOf: text.utf8) } else { JSONText.appendQuoted(text, to: &out) }
        case let .stringConvertible(convertible):
            append(.string(convertible.description), count: count, to: &out)
        case let .array(values):
            out.append(UInt8(ascii: "["))
            for (index, element) in values.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                append(element, count: count, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case let .dictionary(members):
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONText.appendQuoted(member.key, to: &out)
                out.append(UInt8(ascii: ":"))
                append(member.value, count: countKeys.contains(member.key), to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// `0`, `42`, `-7`: a JSON integer as written (no leading zero, at most 15 digits, which a reader's double holds exactly).
    private static func isWholeNumber(_ text: String) -> Bool {
        let digits = text.utf8.first == UInt8(ascii: "-") ? text.utf8.dropFirst() : text.utf8[...]
        guard !digits.isEmpty, digits.count <= 15, digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            return false
        }
        return digits.first != UInt8(ascii: "0") || digits.count == 1
    }
}
