public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif
@_exported public import MirrorReplica

extension Replica {
    /// A replica in `folder`, made if it is not there, that fetches `http(s)://` sources with
    /// `URLSession`; what it holds stays until a sync replaces it.
    public convenience init(folder: URL) throws {
        try self.init(folder: folder, remote: { HTTPSource(base: $0) })
    }

    /// The answer to `request` from the generation the replica holds, as `mirror serve`
    /// gives it (status, the API's kept headers, `ETag`, body, a 304 to a matching
    /// `If-None-Match`), with `X-Mirror-Replica` naming the generation; nil when the replica
    /// holds no page for it (or nothing at all).
    public func response(for request: URLRequest) throws -> ReplicaResponse? {
        guard let url = request.url else { return nil }
        return try answer(url, method: request.httpMethod ?? "GET", body: request.httpBody.map { Array($0) } ?? [],
                          ifNoneMatch: request.value(forHTTPHeaderField: "If-None-Match"))
    }
}

extension ReplicaResponse {
    /// The answer as `URLSession` gives one.
    public var httpResponse: HTTPURLResponse {
        var fields: [String: String] = [:]
        for (name, value) in headers { fields[name] = value }
        return HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: fields)!
    }
}
