import Foundation
package import MirrorJSON

/// A value of an `incremental` path, as `{since}` takes it: a JSON string or number,
/// kept as written. Two values compare as integers when both are integers (any number of
/// digits, as `export --since-id`), as instants when both are ISO 8601 times, as numbers
/// when both are numbers, and as text (byte for byte) otherwise.
package struct SinceValue: Sendable, Equatable, CustomStringConvertible {
    /// The text: a string's content, a number as written.
    package let text: String
    /// It was a JSON number (`{since}` alone in a body stays a number).
    package let isNumber: Bool

    package init(text: String, isNumber: Bool) {
        self.text = text
        self.isNumber = isNumber
    }

    /// A string or a number; nil for anything else and for an empty string.
    package init?(_ value: JSONValue) {
        switch value.kind {
        case .string:
            guard let text = value.stringValue, !text.isEmpty else { return nil }
            self.init(text: text, isNumber: false)
        case .number:
            self.init(text: value.rawText, isNumber: true)
        case .object, .array, .bool, .null:
            return nil
        }
    }

    /// As `_mirror_walks` keeps it: JSON text.
    package init?(json: String) {
        guard let document = try? JSONDocument(parsing: Array(json.utf8)) else { return nil }
        self.init(document.root)
    }

    package var json: String {
        if isNumber { return text }
        var out: [UInt8] = []
        JSONText.appendQuoted(text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    package var description: String { text }

    /// -1, 0 or 1.
    package static func compare(_ a: SinceValue, _ b: SinceValue) -> Int {
        if let x = IDOrder.IntegerText(a.text), let y = IDOrder.IntegerText(b.text) { return x.compare(y) }
        if let x = Instant(a.text), let y = Instant(b.text) { return x.compare(y) }
        if a.isNumber, b.isNumber, let x = Double(a.text), let y = Double(b.text) { return x < y ? -1 : x > y ? 1 : 0 }
        return IDOrder.compareBytes(a.text, b.text)
    }

    /// The greater of two values; `a` when they are equal.
    package static func max(_ a: SinceValue?, _ b: SinceValue?) -> SinceValue? {
        guard let a else { return b }
        guard let b else { return a }
        return compare(b, a) > 0 ? b : a
    }

    /// The lesser of two values; `a` when they are equal.
    package static func least(_ a: SinceValue?, _ b: SinceValue?) -> SinceValue? {
        guard let a else { return b }
        guard let b else { return a }
        return compare(b, a) < 0 ? b : a
    }

    /// Moved back by `seconds`, written in UTC with as many fraction digits as before; nil
    /// if it is not an ISO 8601 time.
    package func movedBack(by seconds: Double) -> SinceValue? {
        guard let instant = Instant(text) else { return nil }
        return SinceValue(text: instant.movedBack(by: seconds).utcText, isNumber: false)
    }

    /// A time with a date, hours, minutes and a zone (`2024-05-01T10:00:00Z`,
    /// `2024-05-01 10:00:00.250+02:00`): whole seconds since 1970 and nanoseconds.
    package struct Instant {
        package let seconds: Int64
        package let nanoseconds: Int64
        /// Digits after the seconds' point, as written.
        let fractionDigits: Int

        package init(seconds: Int64, nanoseconds: Int64, fractionDigits: Int) {
            self.seconds = seconds
            self.nanoseconds = nanoseconds
            self.fractionDigits = fractionDigits
        }

        package init?(_ text: String) {
            let bytes = Array(text.utf8)
            var index = 0
            func number(_ width: Int) -> Int? {
                guard index + width <= bytes.count else { return nil }
                var value = 0
                for byte in bytes[index ..< index + width] {
                    guard byte >= 48, byte <= 57 else { return nil }
                    value = value * 10 + Int(byte - 48)
                }
                index += width
                return value
            }
            func take(_ characters: String) -> Bool {
                guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return false }
                index += 1
                return true
            }
            guard let year = number(4), take("-"), let month = number(2), take("-"), let day = number(2),
                  take("Tt "), let hour = number(2), take(":"), let minute = number(2),
                  (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60 else { return nil }
            var second = 0
            if take(":") {
                guard let value = number(2), value <= 60 else { return nil }
                second = value
            }
            var nanoseconds: Int64 = 0
            var digits = 0
            if take(".,") {
                while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                    if digits < 9 { nanoseconds = nanoseconds * 10 + Int64(bytes[index] - 48) }
                    digits += 1
                    index += 1
                }
                guard digits > 0 else { return nil }
                for _ in min(digits, 9) ..< 9 { nanoseconds *= 10 }
            }
            var offset = 0
            if take("Zz") {
                offset = 0
            } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
                index += 1
                guard let hours = number(2) else { return nil }
                _ = take(":")
                guard let minutes = number(2), hours < 24, minutes < 60 else { return nil }
                offset = sign * (hours * 3600 + minutes * 60)
            } else {
                return nil
            }
            guard index == bytes.count else { return nil }
            var parts = tm()
            parts.tm_year = Int32(year - 1900)
            parts.tm_mon = Int32(month - 1)
            parts.tm_mday = Int32(day)
            parts.tm_hour = Int32(hour)
            parts.tm_min = Int32(minute)
            parts.tm_sec = Int32(second)
            self.init(seconds: Int64(timegm(&parts)) - Int64(offset), nanoseconds: nanoseconds, fractionDigits: digits)
        }

        package func compare(_ other: Instant) -> Int {
            if seconds != other.seconds { return seconds < other.seconds ? -1 : 1 }
            return nanoseconds < other.nanoseconds ? -1 : nanoseconds > other.nanoseconds ? 1 : 0
        }

        package func movedBack(by interval: Double) -> Instant {
            let total = Int64((interval * 1e9).rounded())
            var seconds = self.seconds - total / 1_000_000_000
            var nanoseconds = self.nanoseconds - total % 1_000_000_000
            if nanoseconds < 0 {
                nanoseconds += 1_000_000_000
                seconds -= 1
            }
            return Instant(seconds: seconds, nanoseconds: nanoseconds, fractionDigits: fractionDigits)
        }

        /// `2024-05-01T09:50:00Z`, with the fraction digits it was written with (up to 9).
        var utcText: String {
            var time = time_t(seconds)
            var parts = tm()
            gmtime_r(&time, &parts)
            func pad(_ value: Int, _ width: Int) -> String {
                let text = String(value)
                return String(repeating: "0", count: Swift.max(0, width - text.count)) + text
            }
            var text = "\(pad(Int(parts.tm_year) + 1900, 4))-\(pad(Int(parts.tm_mon) + 1, 2))-\(pad(Int(parts.tm_mday), 2))T"
                + "\(pad(Int(parts.tm_hour), 2)):\(pad(Int(parts.tm_min), 2)):\(pad(Int(parts.tm_sec), 2))"
            if fractionDigits > 0 {
                text += "." + String(pad(Int(nanoseconds), 9).prefix(Swift.min(fractionDigits, 9)))
            }
            return text + "Z"
        }
    }
}
