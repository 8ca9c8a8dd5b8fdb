/// The hidden folder a publish writes its snapshot in, `.publish-<generation>` inside the
/// output folder (so that `--with-files` hard-links the files rather than copy them), locked
/// while the publish lasts. One whose lock nobody holds was left by a publish that was
/// killed: the next publish removes it.
import Foundation
import MirrorExport
import MirrorFiles
import MirrorStore

struct PublishFolder {
    let path: String
    private let descriptor: Int32

    static let prefix = ".publish-"

    init(output: String, name: String) throws {
        try SnapshotWriter.checkOutput(output)
        Self.removeLeftovers(in: output)
        path = (output as NSString).appendingPathComponent(Self.prefix + name)
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        } catch {
            throw Publisher.Failure(description: "\(SystemError.reason(error)) while making '\(path)'")
        }
        var opened: Int32 = -1
        do throws(FileError) {
            opened = try FileSystem.openLockFile(path + "/lock", followingLinks: false)
            try FileSystem.lock(opened, waiting: false)
        } catch {
            if opened >= 0 { try? FileSystem.close(opened) }
            try? FileManager.default.removeItem(atPath: path)
            throw Publisher.Failure(description: "cannot lock '\(path)/lock': \(error.reason)")
        }
        descriptor = opened
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
        try? FileSystem.close(descriptor)
    }

    /// Removes the folders of publishes that no longer run: their lock can be taken.
    private static func removeLeftovers(in output: String) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: output)) ?? []
        for name in names where name.hasPrefix(prefix) {
            let folder = (output as NSString).appendingPathComponent(name)
            guard let lock = try? FileSystem.openLockFile(folder + "/lock", followingLinks: false, creating: false) else { continue }
            defer { try? FileSystem.close(lock) }
            if (try? FileSystem.lock(lock, waiting: false)) != nil { try? FileManager.default.removeItem(atPath: folder) }
        }
    }
}
