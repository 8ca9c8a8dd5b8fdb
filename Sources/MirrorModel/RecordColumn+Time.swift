/// The strings a `time` column keeps, decided in Swift: the rule of the column's SQL
/// (`GeneratedColumns`), so that what `mirror infer` calls a time is what the column holds.
extension RecordColumn {
    /// `YYYY-MM-DDTHH:MM` that SQLite's `julianday()` reads: month 01–12, day 01–31 (not
    /// checked against the month, as SQLite does not), hour 00–24, minute 00–59; then
    /// `:SS` (00–59) with `.` and digits after it, all optional; then spaces, `Z` or `z` or
    /// `±HH:MM` (hour 00–14, minute 00–59), spaces, all optional; nothing else.
    package static func isTime(_ text: String) -> Bool {
        var text = text
        return text.withUTF8(isTime)
    }

    /// `isTime` of the UTF-8 text `bytes`.
    package static func isTime(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var at = 0
        func number(_ width: Int, in range: ClosedRange<Int>) -> Bool {
            guard at + width <= bytes.count else { return false }
            var value = 0
            for byte in bytes[at ..< at + width] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return false }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            at += width
            return range.contains(value)
        }
        func take(_ character: Unicode.Scalar) -> Bool {
            guard at < bytes.count, bytes[at] == UInt8(ascii: character) else { return false }
            at += 1
            return true
        }
        func skipSpaces() {
            // sqlite3Isspace: space, \t, \n, \v, \f, \r.
            while at < bytes.count, bytes[at] == 0x20 || (0x09 ... 0x0D).contains(bytes[at]) { at += 1 }
        }
        guard number(4, in: 0 ... 9999), take("-"), number(2, in: 1 ... 12), take("-"), number(2, in: 1 ... 31),
              take("T"), number(2, in: 0 ... 24), take(":"), number(2, in: 0 ... 59) else { return false }
        if take(":") {
            guard number(2, in: 0 ... 59) else { return false }
            if at + 1 < bytes.count, bytes[at] == UInt8(ascii: "."),
               bytes[at + 1] >= UInt8(ascii: "0"), bytes[at + 1] <= UInt8(ascii: "9") {
                at += 1
                while at < bytes.count, bytes[at] >= UInt8(ascii: "0"), bytes[at] <= UInt8(ascii: "9") { at += 1 }
            }
        }
        skipSpaces()
        if take("+") || take("-") {
            guard number(2, in: 0 ... 14), take(":"), number(2, in: 0 ... 59) else { return false }
        } else {
            _ = take("Z") || take("z")
        }
        skipSpaces()
        return at == bytes.count
    }
}
