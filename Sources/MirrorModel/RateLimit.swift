import Foundation

/// `rate_limit`: at most `count` requests per `seconds`, e.g. `5/s`, `100/m`.
public struct RateLimit: Sendable, Equatable {
    public let count: Int
    public let seconds: Double

    /// Seconds between two requests.
    public var interval: Double { seconds / Double(count) }

    public init?(_ text: String) {
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
