import Foundation
import MirrorModel

/// What keeps a path from being an output folder: it names a file, or a file stands where
/// a folder above it would be made. The loader reports it at `output`, `run` for `--output`.
package enum OutputObstacle: Sendable, Equatable {
    /// The folder's path names a file.
    case isFile
    /// This file stands where one of the folders above it would be.
    case insideFile(String)

    /// Nil when `folder` is a folder or can be made.
    package static func find(for folder: String) -> OutputObstacle? {
        var path = folder
        while !path.isEmpty {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) {
                if isFolder.boolValue { return nil }
                return path == folder ? .isFile : .insideFile(path)
            }
            let parent = Paths.parent(of: path)
            if parent == path { return nil }
            path = parent
        }
        return nil
    }
}
