/// The hidden folder a publish writes its snapshot in, `.publish-<generation>` inside the
/// output folder (so that `--with-files` hard-links the files rather than copy them), locked
/// while the publish lasts. One whose lock nobody holds was left by a publish that was
/// killed: the next publish removes it.
import Foundation
import MirrorExport
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
        descriptor = open(path + "/lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        let locked = descriptor >= 0 && flock(descriptor, LOCK_EX | LOCK_NB) == 0
        guard locked else {
            let reason = String(cString: strerror(errno))
            if descriptor >= 0 { close(descriptor) }
            try? FileManager.default.removeItem(atPath: path)
            throw Publisher.Failure(description: "cannot lock '\(path)/lock': \(reason)")
        }
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
        close(descriptor)
    }

    /// Removes the folders of publishes that no longer run: their lock can be taken.
    private static func removeLeftovers(in output: String) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: output)) ?? []
        for name in names where name.hasPrefix(prefix) {
            let folder = (output as NSString).appendingPathComponent(name)
            let lock = open(folder + "/lock", O_RDWR | O_CLOEXEC | O_NOFOLLOW)
            guard lock >= 0 else { continue }
            defer { close(lock) }
            if flock(lock, LOCK_EX | LOCK_NB) == 0 { try? FileManager.default.removeItem(atPath: folder) }
        }
    }
}
