import Foundation

/// `rate_limit`: at most `count` requests per `seconds`, e.g. `5/s`, `100/m`.
package struct RateLimit: Sendable, Equatable {
    package let count: Int
    package let seconds: Double

    /// Seconds between two requests.
    package var interval: Double { seconds / Double(count) }

    package init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let count = Int(parts[0].trimmingCharacters(in: .whitespaces)), count > 0 else { return nil }
        switch parts[1].trimmingCharacters(in: .whitespaces) {
        case "s": seconds = 1
        case "m": seconds = 60
        case "h": seconds = 3600
        default: return nil
        }
        self.count = count
    }
}
