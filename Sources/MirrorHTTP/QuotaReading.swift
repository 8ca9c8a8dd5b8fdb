package import Foundation

/// What one response says about its host's request quota, in either dialect APIs send:
///
/// - the IETF draft's `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` (delta
///   seconds), and its later structured fields `RateLimit: "default";r=50;t=30` (or the
///   older `limit=100, remaining=50, reset=30`) with `RateLimit-Policy: "default";q=100;w=60`
///   (or `100;w=60`, `limit=100;w=60`);
/// - `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset`, the reset in seconds
///   from now or, when larger than a year of seconds, as a Unix time (GitHub's, Twitter's);
/// - `Retry-After`, seconds or an HTTP date.
///
/// Of several policies in one field, the one with the least remaining counts. What a field
/// does not say (or says in a form not read) is nil.
package struct QuotaReading: Sendable, Equatable {
    /// Requests a window allows.
    package var limit: Int?
    /// Requests left in the current window.
    package var remaining: Int?
    /// Seconds from now until the window renews.
    package var reset: Double?
    /// The window's length in seconds (`RateLimit-Policy`'s `w`).
    package var window: Double?
    /// Seconds the server asks to wait before the next request (`Retry-After`).
    package var retryAfter: Double?

    package init(limit: Int? = nil, remaining: Int? = nil, reset: Double? = nil, window: Double? = nil,
                 retryAfter: Double? = nil) {
        self.limit = limit
        self.remaining = remaining
        self.reset = reset
        self.window = window
        self.retryAfter = retryAfter
    }

    /// A reset value larger than this is a Unix time, not seconds from now.
    static let epochThreshold = 365.0 * 86_400

    /// Reads `headers` (names lowercased); `now` is the time of day epoch and HTTP-date
    /// values are read against.
    package init(headers: [String: String], now: Date) {
        func integer(_ name: String) -> Int? {
            headers[name].flatMap { Self.count($0) }
        }
        func seconds(_ text: String?) -> Double? {
            guard let text, let value = Double(text.trimmingCharacters(in: .whitespaces)), value.isFinite, value >= 0 else {
                return nil
            }
            return value > Self.epochThreshold ? max(0, value - now.timeIntervalSince1970) : value
        }
        let policy = headers["ratelimit-policy"].flatMap { Self.policies($0) }
        // The structured field, else the draft's three fields, else the X- ones.
        if let field = headers["ratelimit"], let chosen = Self.members(field).min(by: Self.tighter) {
            remaining = chosen.parameters["r"].flatMap(Self.count) ?? chosen.parameters["remaining"].flatMap(Self.count)
            reset = seconds(chosen.parameters["t"] ?? chosen.parameters["reset"])
            limit = chosen.parameters["limit"].flatMap(Self.count) ?? chosen.parameters["q"].flatMap(Self.count)
            if let policy, let named = policy.first(where: { $0.name != nil && $0.name == chosen.name }) ?? policy.first {
                limit = limit ?? named.limit
                window = named.window
            }
        } else if let first = policy?.first {
            limit = first.limit
            window = first.window
        }
        remaining = remaining ?? integer("ratelimit-remaining") ?? integer("x-ratelimit-remaining")
        limit = limit ?? integer("ratelimit-limit") ?? integer("x-ratelimit-limit")
        reset = reset ?? seconds(headers["ratelimit-reset"]) ?? seconds(headers["x-ratelimit-reset"])
        retryAfter = headers["retry-after"].flatMap { RetryPolicy.seconds(retryAfter: $0, now: now) }.map { max(0, $0) }
    }

    /// A count of requests: a whole number, below zero read as zero; one too large for `Int`
    /// or not a whole number is not read.
    static func count(_ text: String) -> Int? {
        Int(text.trimmingCharacters(in: .whitespaces)).map { max(0, $0) }
    }

    /// Nothing was said.
    package var isEmpty: Bool { self == QuotaReading() }

    /// The window's budget is spent: the answer to a request sent anyway would be a refusal.
    package var isSpent: Bool { remaining.map { $0 <= 0 } ?? false }

    // MARK: Structured fields

    /// One member of a list field: an optional name (a quoted string or a token without
    /// `=`), then `;`- or `,`-separated `key=value` parameters.
    struct Member: Equatable {
        var name: String?
        var parameters: [String: String] = [:]
        /// A bare number (`100;w=60`: the policy's quota).
        var number: String?
    }

    /// The members of a field such as `"default";r=50;t=30, "daily";r=900;t=3600`. The older
    /// form `limit=100, remaining=50, reset=30` has no names: it is one member.
    static func members(_ field: String) -> [Member] {
        let items = field.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        if items.allSatisfy({ $0.contains("=") && !$0.contains(";") && !$0.hasPrefix("\"") }) {
            var member = Member()
            for item in items { member.add(item) }
            return member.parameters.isEmpty ? [] : [member]
        }
        return items.compactMap { item in
            var member = Member()
            for (index, part) in item.split(separator: ";").enumerated() {
                let text = part.trimmingCharacters(in: .whitespaces)
                if index == 0, !text.contains("=") {
                    if text.hasPrefix("\"") {
                        member.name = String(text.dropFirst().prefix { $0 != "\"" })
                    } else if Double(text) != nil {
                        member.number = text
                    } else {
                        member.name = text
                    }
                } else {
                    member.add(text)
                }
            }
            return member.parameters.isEmpty && member.number == nil ? nil : member
        }
    }

    /// `RateLimit-Policy`: each policy's quota (`q=`, `limit=` or a bare number) and window.
    static func policies(_ field: String) -> [(name: String?, limit: Int?, window: Double?)]? {
        let policies = members(field).map { member in
            (name: member.name,
             limit: (member.parameters["q"] ?? member.parameters["limit"] ?? member.number).flatMap(count),
             window: member.parameters["w"].flatMap { Double($0) }.flatMap { $0.isFinite && $0 > 0 ? $0 : nil })
        }
        return policies.isEmpty ? nil : policies
    }

    /// The member with the least remaining, then the later reset, counts.
    static func tighter(_ a: Member, _ b: Member) -> Bool {
        func remaining(_ member: Member) -> Int { (member.parameters["r"] ?? member.parameters["remaining"]).flatMap { Int($0) } ?? .max }
        func reset(_ member: Member) -> Double { (member.parameters["t"] ?? member.parameters["reset"]).flatMap { Double($0) } ?? 0 }
        return remaining(a) != remaining(b) ? remaining(a) < remaining(b) : reset(a) > reset(b)
    }
}

extension QuotaReading.Member {
    fileprivate mutating func add(_ parameter: String) {
        let parts = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count == 2, !parts[0].isEmpty else { return }
        var value = parts[1]
        if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
        parameters[parts[0].lowercased()] = value
    }
}
