import Foundation
import MirrorFiles
import MirrorJSON
import MirrorModel

/// The file an OAuth 2 definition keeps its rotated refresh token in (`token_store`), so
/// that a token the server replaced is never lost: written whole or not at all (a
/// temporary file beside it, fsync, rename, fsync of the folder), mode 0600; and proved
/// writable before a refresh is sent (`probe`), since the server revokes the token it
/// rotates from as it answers. It also
/// keeps a digest of the configured refresh token it descends from: once the job file
/// names another one (a new login), the configured one wins again.
package struct TokenStore: Sendable {
    package let path: String

    package init(path: String) {
        self.path = path
    }

    /// What the file holds.
    package struct Saved: Sendable, Equatable {
        package var refreshToken: String
        /// SHA-256 of the configured refresh token, hex.
        package var configured: String
        /// When it was written (`saved_at`), as the file says.
        package var savedAt: String? = nil
    }

    /// The saved token, if the file holds one; a file that cannot be read is an error
    /// naming the path (never the token).
    package func read() throws(StoreFailure) -> Saved? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StoreFailure(reason: "cannot read the token store '\(path)'")
        }
        guard let document = try? JSONDocument(parsing: [UInt8](data)),
              let token = document.root["refresh_token"]?.stringValue, !token.isEmpty else {
            throw StoreFailure(reason: "the token store '\(path)' holds no refresh_token")
        }
        return Saved(refreshToken: token, configured: document.root["configured_sha256"]?.stringValue ?? "",
                     savedAt: document.root["saved_at"]?.stringValue)
    }

    /// Proves that the file can be written before anything that must be written there is
    /// asked for: a temporary file beside it (its folder made if missing) is written, synced
    /// and removed. A full disk, a read-only one, a file where the folder should be: each
    /// fails here, naming the store and why.
    package func probe() throws(StoreFailure) {
        try makeFolder()
        let temporary = path + ".\(FileSystem.processID).probe.tmp"
        let descriptor: Int32
        do throws(FileError) {
            descriptor = try FileSystem.createOrEmpty(temporary, followingLinks: false, mode: 0o600)
        } catch {
            throw StoreFailure(reason: "cannot write the token store '\(path)' (\(error.reason.lowercased()))")
        }
        defer {
            try? FileSystem.close(descriptor)
            try? FileSystem.remove(temporary)
        }
        // A block, as the token will take.
        let bytes = [UInt8](repeating: UInt8(ascii: " "), count: 4096)
        do throws(FileError) {
            try FileSystem.write(bytes, to: descriptor)
            try FileSystem.flush(descriptor)
        } catch {
            throw StoreFailure(reason: "cannot write the token store '\(path)' (\(error.reason.lowercased()))")
        }
    }

    /// Makes the store's folder, mode 0700, if it is missing.
    private func makeFolder() throws(StoreFailure) {
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty, !FileManager.default.fileExists(atPath: folder) {
            do {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw StoreFailure(reason: "cannot make the token store's folder '\(folder)'")
            }
        }
    }

    /// Replaces the file's content with `saved`, atomically and durably; returns the time it
    /// says it was saved at.
    @discardableResult
    package func write(_ saved: Saved) throws(StoreFailure) -> String {
        let folder = (path as NSString).deletingLastPathComponent
        try makeFolder()
        let savedAt = Timestamp.string(Date())
        let text = "{\"refresh_token\":" + JSONText.quoted(saved.refreshToken) + ",\"configured_sha256\":" + JSONText.quoted(saved.configured)
            + ",\"saved_at\":" + JSONText.quoted(savedAt) + "}\n"
        // A run killed while it wrote left its temporary file: it is not the token.
        let name = (path as NSString).lastPathComponent
        for leftover in (try? FileManager.default.contentsOfDirectory(atPath: folder.isEmpty ? "." : folder)) ?? []
        where leftover.hasPrefix(name + ".") && leftover.hasSuffix(".tmp") {
            try? FileSystem.remove((folder as NSString).appendingPathComponent(leftover))
        }
        let temporary = path + ".\(FileSystem.processID).tmp"
        let descriptor: Int32
        do throws(FileError) {
            descriptor = try FileSystem.createOrEmpty(temporary, followingLinks: false, mode: 0o600)
        } catch {
            throw StoreFailure(reason: "cannot write the token store '\(path)': \(error.reason.lowercased())")
        }
        do throws(FileError) {
            try FileSystem.write(Array(text.utf8), to: descriptor)
            try FileSystem.flush(descriptor)
        } catch {
            try? FileSystem.close(descriptor)
            try? FileSystem.remove(temporary)
            throw StoreFailure(reason: "cannot write the token store '\(path)': \(error.reason.lowercased())")
        }
        try? FileSystem.close(descriptor)
        do throws(FileError) {
            try FileSystem.rename(temporary, to: path)
        } catch {
            try? FileSystem.remove(temporary)
            throw StoreFailure(reason: "cannot write the token store '\(path)': \(error.reason.lowercased())")
        }
        if let directory = try? FileSystem.openFolder(folder.isEmpty ? "." : folder) {
            try? FileSystem.flush(directory)
            try? FileSystem.close(directory)
        }
        return savedAt
    }

    package struct StoreFailure: Error, Sendable {
        package let reason: String
    }
}
