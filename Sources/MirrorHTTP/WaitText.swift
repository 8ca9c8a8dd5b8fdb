/// A wait as a message says it: `1h`, `5m`, `90s` (whole units when it is a whole number of
/// them, else seconds, rounded up).
package enum WaitText {
    package static func of(_ seconds: Double) -> String {
        let whole = Int(min(max(0, seconds.rounded(.up)), Double(Int32.max)))
        for (unit, scale) in [("d", 86_400), ("h", 3600), ("m", 60)] where whole >= scale && whole % scale == 0 {
            return "\(whole / scale)\(unit)"
        }
        return "\(whole)s"
    }
}
