package import Foundation

/// UTC ISO 8601 with milliseconds (`2026-11-22T20:15:00.123Z`): fixed width, so text
/// order is time order in SQL.
package enum Timestamp {
    package static func string(_ date: Date) -> String {
        let (whole, fraction) = Int64((date.timeIntervalSince1970 * 1000).rounded(.down)).quotientAndRemainder(dividingBy: 1000)
        var seconds = time_t(fraction < 0 ? whole - 1 : whole)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var text: [UInt8] = []
        text.reserveCapacity(24)
        // `value`'s last `width` digits, then `separator`.
        func append(_ value: Int, _ width: Int, then separator: Unicode.Scalar) {
            for place in (0..<width).reversed() {
                var digit = value
                for _ in 0..<place { digit /= 10 }
                text.append(UInt8(ascii: "0") + UInt8(digit % 10))
            }
            text.append(UInt8(ascii: separator))
        }
        let year = Int(parts.tm_year) + 1900
        if (0...9999).contains(year) {
            append(year, 4, then: "-")
        } else {
            text.append(contentsOf: "\(year)-".utf8)
        }
        append(Int(parts.tm_mon) + 1, 2, then: "-")
        append(Int(parts.tm_mday), 2, then: "T")
        append(Int(parts.tm_hour), 2, then: ":")
        append(Int(parts.tm_min), 2, then: ":")
        append(Int(parts.tm_sec), 2, then: ".")
        append(Int(fraction < 0 ? fraction + 1000 : fraction), 3, then: "Z")
        return String(decoding: text, as: UTF8.self)
    }

    package static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}
