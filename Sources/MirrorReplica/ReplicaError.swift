package import Foundation

/// Why a sync or an answer failed. A sync that fails leaves the replica at the generation it
/// had: nothing half-written is ever read.
public enum ReplicaError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The source's `manifest.json` cannot be used.
    case manifest(String)
    /// The source could not be read: the URL (its query left out, which may hold a
    /// presigned signature) and what went wrong.
    case source(String)
    /// An object arrived whole but is not what the manifest says: refused by name.
    case refused(path: String, reason: String)
    /// The replica's folder could not be written or read.
    case folder(String)
    /// Another sync of the same folder is under way.
    case busy(String)
    /// The sync was cancelled; what it had fetched is kept for the next one.
    case cancelled
    /// A read of the replica's records that cannot be answered: no such table or column, a
    /// record that does not decode.
    case query(String)
    /// The change feed no longer holds the replica's mark (compacted past it, or another
    /// feed), and no source was given to sync from whole: serve's reason.
    case behind(String)

    public var description: String {
        switch self {
        case let .manifest(what): what
        case let .source(what): what
        case let .refused(path, reason): "\(path): \(reason): refused; the replica keeps the generation it had"
        case let .folder(what): what
        case let .busy(folder): "another sync of \(folder) is under way"
        case .cancelled: "cancelled"
        case let .query(what): what
        case let .behind(reason): "\(reason); the replica keeps the generation it had: sync it from a snapshot or a published prefix"
        }
    }

    /// `url` as messages show it: without its query, which may hold a signature.
    package static func shown(_ url: URL) -> String {
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url.absoluteString }
        let query = parts.query != nil
        parts.query = nil
        parts.password = nil
        return (parts.string ?? url.absoluteString) + (query ? "?…" : "")
    }
}
