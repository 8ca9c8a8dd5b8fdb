/// How ids compare: as integers when both are integers (any number of digits), else as
/// text — SPEC §2's rule for `--since-id` / `--max-id`.
package enum IDOrder {
    /// -1, 0 or 1.
    package static func compare(_ a: String, _ b: String) -> Int {
        if let x = IntegerText(a), let y = IntegerText(b) { return x.compare(y) }
        return Self.compareBytes(a, b)
    }

    /// A total order for `ORDER BY`: integers (numerically) before other ids (as text).
    package static func collate(_ a: String, _ b: String) -> Int {
        switch (IntegerText(a), IntegerText(b)) {
        case let (x?, y?): return x.compare(y)
        case (.some, nil): return -1
        case (nil, .some): return 1
        case (nil, nil): return Self.compareBytes(a, b)
        }
    }

    /// Text order: byte for byte, as SQLite's BINARY collation (`String ==` would hold
    /// canonically equivalent ids equal).
    static func compareBytes(_ a: String, _ b: String) -> Int {
        a.utf8.elementsEqual(b.utf8) ? 0 : (a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : 1)
    }

    /// A decimal integer of any length, kept as text.
    package struct IntegerText {
        package let negative: Bool
        package let digits: Substring.UTF8View

        package init?(_ text: String) {
            var body = Substring(text)
            negative = body.hasPrefix("-")
            if negative { body = body.dropFirst() }
            guard !body.isEmpty, body.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
            let trimmed = body.drop { $0 == "0" }
            digits = trimmed.utf8
        }

        package func compare(_ other: IntegerText) -> Int {
            let lhsZero = digits.isEmpty, rhsZero = other.digits.isEmpty
            let lhsNegative = negative && !lhsZero, rhsNegative = other.negative && !rhsZero
            if lhsNegative != rhsNegative { return lhsNegative ? -1 : 1 }
            var magnitude: Int
            if digits.count != other.digits.count {
                magnitude = digits.count < other.digits.count ? -1 : 1
            } else if digits.elementsEqual(other.digits) {
                magnitude = 0
            } else {
                magnitude = digits.lexicographicallyPrecedes(other.digits) ? -1 : 1
            }
            return lhsNegative ? -magnitude : magnitude
        }
    }
}
