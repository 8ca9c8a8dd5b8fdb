import Foundation

/// A URL's scheme, host and port, parsed once: the job's own origin is compared with
/// every request a walk or a download makes.
package struct Origin: Sendable, CustomStringConvertible {
    package let scheme: String
    package let host: String?
    /// As written; nil when the URL names none.
    package let port: Int?

    package init?(_ url: String) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased() else {
            return nil
        }
        self.scheme = scheme
        host = components.host?.lowercased()
        port = components.port
    }

    /// `scheme://host[:port]`, as a message names it.
    package var description: String {
        "\(scheme)://\(host.map { $0.contains(":") ? "[\($0)]" : $0 } ?? "")" + (port.map { ":\($0)" } ?? "")
    }

    private var effectivePort: Int? { port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : nil) }

    /// Whether `other` is this origin: the same scheme and host, and the same port, a
    /// scheme's default one written or not.
    package func isSame(as other: Origin) -> Bool {
        scheme == other.scheme && host == other.host && effectivePort == other.effectivePort
    }

    /// Whether `url` is on this origin, or on its https upgrade.
    package func admits(_ url: String) -> Bool {
        guard let other = Origin(url), host == other.host else { return false }
        if scheme == other.scheme { return effectivePort == other.effectivePort }
        return scheme == "http" && other.scheme == "https" && (port == nil || port == 80)
            && (other.port == nil || other.port == 443)
    }
}
