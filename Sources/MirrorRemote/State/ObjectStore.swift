import Foundation
package import Logging
import MirrorModel

/// A remote state store's failure: what was asked, of which location, and why; whether it
/// was a write's condition that did not hold (another worker wrote first).
package struct StateError: Error, Sendable, CustomStringConvertible {
    package let description: String
    /// A write only-if-absent or only-if-unchanged found the object otherwise.
    package let lostCondition: Bool

    package init(_ description: String, lostCondition: Bool = false) {
        self.description = description
        self.lostCondition = lostCondition
    }
}

/// Where a remote state is kept: objects under one root, named by keys with `/` in them,
/// read and written whole or from and to files, written only if absent or only if
/// unchanged, and removed only if unchanged. `S3ObjectStore` keeps them in a bucket (`s3://bucket/prefix`),
/// `FolderObjectStore` in a folder (`file:///dir`: a shared disk, or a test's folder).
package protocol ObjectStore: Sendable {
    /// The location as the user named it: `s3://bucket/prefix`, `file:///dir`.
    var location: String { get }
    /// The object at `key` and its tag (an ETag); nil when there is none.
    func read(_ key: String) async throws(StateError) -> (bytes: [UInt8], tag: String)?
    /// Writes `bytes` at `key` if `condition` holds (else a `lostCondition` error); returns the new tag.
    @discardableResult
    func write(_ key: String, _ bytes: [UInt8], condition: S3Client.Condition?) async throws(StateError) -> String
    /// Writes the file at `path` to `key`, whatever is there.
    func upload(_ key: String, fileAt path: String) async throws(StateError)
    /// Writes the object at `key` to a new file at `path`; nil, and no file, when there is none.
    func download(_ key: String, toFileAt path: String) async throws(StateError) -> S3Client.Downloaded?
    /// Removes the object at `key`; one that is not there is no error.
    func delete(_ key: String) async throws(StateError)
    /// Removes the object at `key` only if its tag is still `tag` (else a `lostCondition`
    /// error); one that is not there is no error.
    func delete(_ key: String, ifTag tag: String) async throws(StateError)
    /// The keys that start with `prefix`, sorted.
    func list(_ prefix: String) async throws(StateError) -> [String]
    /// Removes what writes cut off left (a process killed mid-write), not written to for
    /// `age`; whatever cannot be removed stays.
    func sweepLeftovers(olderThan age: Duration) async
}

extension ObjectStore {
    /// A store whose writes leave nothing half-written (S3: an object appears whole or not at all).
    package func sweepLeftovers(olderThan age: Duration) async {}
}

/// Opens the store `location` names: `s3://bucket/prefix` (AWS's variables in
/// `environment` say where and with which key, see `S3Configuration`) or `file:///dir`.
package enum StateLocation {
    package static func open(_ location: String, environment: [String: String], logger: Logger) throws(StateError) -> any ObjectStore {
        if location.hasPrefix("s3://") {
            do {
                return S3ObjectStore(S3Client(try S3Configuration(url: location, environment: environment), logger: logger),
                                     location: location)
            } catch {
                throw StateError("--state \(location): \(error)")
            }
        }
        if location.hasPrefix("file://") {
            let path = String(location.dropFirst("file://".count))
            guard path.hasPrefix("/"), path.count > 1 else {
                throw StateError("--state \(location): a folder is named by an absolute path, such as file:///srv/mirror-state")
            }
            return FolderObjectStore(root: path, location: location)
        }
        throw StateError("--state must be s3://bucket/prefix or file:///folder, not '\(location)'")
    }
}

/// An `ObjectStore` in an S3 bucket, its keys under the location's prefix.
package struct S3ObjectStore: ObjectStore {
    let client: S3Client
    package let location: String

    init(_ client: S3Client, location: String) {
        self.client = client
        self.location = location
    }

    private func failure(_ error: S3Error) -> StateError {
        StateError("\(error)", lostCondition: error.kind == .preconditionFailed)
    }

    private func key(_ key: String) -> String { client.configuration.key(key) }

    package func read(_ key: String) async throws(StateError) -> (bytes: [UInt8], tag: String)? {
        do {
            return try await client.get(self.key(key)).map { ($0.body, $0.etag) }
        } catch { throw failure(error) }
    }

    package func write(_ key: String, _ bytes: [UInt8], condition: S3Client.Condition?) async throws(StateError) -> String {
        do {
            return try await client.put(self.key(key), bytes, condition: condition)
        } catch { throw failure(error) }
    }

    package func upload(_ key: String, fileAt path: String) async throws(StateError) {
        do {
            try await client.upload(self.key(key), fileAt: path)
        } catch { throw failure(error) }
    }

    package func download(_ key: String, toFileAt path: String) async throws(StateError) -> S3Client.Downloaded? {
        do {
            return try await client.download(self.key(key), toFileAt: path)
        } catch { throw failure(error) }
    }

    package func delete(_ key: String) async throws(StateError) {
        do {
            try await client.delete(self.key(key))
        } catch { throw failure(error) }
    }

    package func delete(_ key: String, ifTag tag: String) async throws(StateError) {
        do {
            try await client.delete(self.key(key), ifMatch: tag)
        } catch { throw failure(error) }
    }

    package func list(_ prefix: String) async throws(StateError) -> [String] {
        let root = client.configuration.prefix.isEmpty ? "" : client.configuration.prefix + "/"
        do {
            return try await client.list(prefix: root + prefix).map { String($0.key.dropFirst(root.count)) }.sorted()
        } catch { throw failure(error) }
    }
}
