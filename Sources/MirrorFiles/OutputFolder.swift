#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What mirror makes inside an output folder is mirror's alone. Every path there is opened
/// without following a symbolic link, so a link planted in the folder can neither send a
/// write outside it nor make mirror truncate or delete what the link points to. (The output
/// folder itself is the user's to choose, and may be a link.)
package enum OutputFolder {
    /// Why a path of mirror's was not opened.
    package struct Refusal: Error, Sendable {
        /// The path is a symbolic link.
        package let isLink: Bool
        /// The `errno` of the failure otherwise.
        package let code: Int32

        package init(isLink: Bool, code: Int32) {
            self.isLink = isLink
            self.code = code
        }

        /// What went wrong with `relative` (a path relative to the output folder), or,
        /// for a failure other than a link, the system's reason.
        package func reason(_ relative: String) -> String {
            isLink ? OutputFolder.linkRefusal(relative) : FileError(code: code).reason
        }
    }

    /// Why a symbolic link at `relative` (a path relative to the output folder) is refused.
    package static func linkRefusal(_ relative: String) -> String {
        "'\(relative)' is a symbolic link; mirror does not follow links in its output folder"
    }

    /// Whether `name` in the folder open as `parent` is a symbolic link itself.
    package static func isLink(_ name: String, in parent: Int32) -> Bool {
        FileStatus(entry: name, in: parent)?.kind == .link
    }

    /// Opens the folder `name` in the folder open as `parent` without following a link;
    /// with `create`, makes it first when it is missing. The descriptor is the caller's to close.
    package static func openFolder(_ name: String, in parent: Int32, create: Bool) throws(Refusal) -> Int32 {
        var made = false
        while true {
            let descriptor = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if descriptor >= 0 { return descriptor }
            let code = errno
            // A link to a folder fails as "not a directory" under O_DIRECTORY: tell it apart.
            if isLink(name, in: parent) { throw Refusal(isLink: true, code: code) }
            guard code == ENOENT, create, !made else { throw Refusal(isLink: false, code: code) }
            // Another job may make it at the same moment: either way, it is opened again.
            if mkdirat(parent, name, 0o755) != 0, errno != EEXIST { throw Refusal(isLink: false, code: errno) }
            made = true
        }
    }
}
