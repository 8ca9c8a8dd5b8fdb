import Foundation

/// What mirror makes inside an output folder is mirror's alone. Every path there is opened
/// without following a symbolic link, so a link planted in the folder can neither send a
/// write outside it nor make mirror truncate or delete what the link points to. (The output
/// folder itself is the user's to choose, and may be a link.)
enum OutputFolder {
    /// Why a symbolic link at `relative` (a path relative to the output folder) is refused.
    static func linkRefusal(_ relative: String) -> String {
        "'\(relative)' is a symbolic link; mirror does not follow links in its output folder"
    }

    /// Whether `name` in the folder open as `parent` is a symbolic link itself.
    static func isLink(_ name: String, in parent: Int32) -> Bool {
        var info = stat()
        return fstatat(parent, name, &info, AT_SYMLINK_NOFOLLOW) == 0 && info.st_mode & S_IFMT == S_IFLNK
    }
}
