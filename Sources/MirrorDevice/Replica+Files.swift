public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif
import MirrorFiles
import MirrorReplay
import MirrorStore

extension Replica {
    /// The local copy of the file downloaded from `url` (a record's remote file URL, as
    /// `_mirror_files.url` has it), in the generation the replica holds; nil when it holds
    /// none (a publish without `--with-files`, a file that was never downloaded). The file
    /// is the generation's: a later sync removes it with that generation once nothing reads
    /// it, so open it now rather than keep its URL.
    public func fileURL(for url: URL) throws -> URL? {
        try withGeneration { _, folder in try located(url, in: folder).map { URL(fileURLWithPath: folder + "/" + $0.path) } } ?? nil
    }

    /// The answer to a `GET` or `HEAD` of a downloaded file's URL, as `mirror serve` answers
    /// `/_mirror/files/…`: its bytes, the `Content-Type` it was downloaded with, its SHA-256 as
    /// `ETag` (a `304` to a matching `If-None-Match`), and `X-Mirror-Replica` naming the
    /// generation; nil when the replica holds no file downloaded from the URL.
    public func fileResponse(for request: URLRequest) throws -> ReplicaResponse? {
        let method = request.httpMethod ?? "GET"
        guard let url = request.url, method == "GET" || method == "HEAD" else { return nil }
        return try withGeneration { generation, folder -> ReplicaResponse? in
            guard let file = try located(url, in: folder) else { return nil }
            let etag = "\"\(file.entry.sha256)\""
            let named = [("ETag", etag), ("X-Mirror-Replica", generation)]
            if let asked = request.value(forHTTPHeaderField: "If-None-Match"), EntityTags.match(asked, etag) {
                return ReplicaResponse(url: url, status: 304, headers: named, body: Data())
            }
            let body: Data
            do {
                body = method == "HEAD" ? Data() : try Data(contentsOf: URL(fileURLWithPath: folder + "/" + file.path), options: .mappedIfSafe)
            } catch {
                throw ReplicaError.folder("cannot read \(file.path) of generation \(generation): \(SystemError.reason(error))")
            }
            return ReplicaResponse(url: url, status: 200,
                                   headers: [("Content-Type", file.entry.contentType ?? "application/octet-stream")] + named, body: body)
        } ?? nil
    }

    /// The generation's file downloaded from `url`, when its index lists it under `files/`
    /// and it is there.
    private func located(_ url: URL, in folder: String) throws -> FileLookup.Located? {
        let found: FileLookup.Located?
        do {
            found = try FileLookup.find(url: url.absoluteString, in: folder, connections: .files())
        } catch {
            throw ReplicaError.folder("cannot read the file index of \(folder): \(SystemError.reason(error))")
        }
        guard let found else { return nil }
        let parts = found.path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] == "files", !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }),
              FileManager.default.fileExists(atPath: folder + "/" + found.path) else { return nil }
        return found
    }
}
