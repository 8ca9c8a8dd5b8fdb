#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `stat` says of a file: what it is, its size, the file its name leads to (device
/// and inode), its links and when it was last written. A value on the stack: asking costs
/// the system call and nothing more.
package struct FileStatus: Sendable {
    package enum Kind: Sendable {
        case regular
        case folder
        case link
        case other
    }

    package let kind: Kind
    package let size: Int
    package let device: UInt64
    package let inode: UInt64
    /// The bytes of disk its blocks take: less than `size` where it has holes.
    package let allocated: Int
    /// How many names the file has (hard links).
    package let links: Int
    /// When its bytes were last written, in whole seconds since 1970.
    package let modified: Int

    /// The file `path` leads to, a link followed (`stat`); nil when there is none.
    package init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.init(info)
    }

    /// The entry at `path` itself, a link not followed (`lstat`).
    package init?(entryAt path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        self.init(info)
    }

    /// The open file (`fstat`).
    package init?(descriptor: Int32) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        self.init(info)
    }

    /// The entry `name` in the folder open as `folder`, a link not followed (`fstatat`).
    package init?(entry name: String, in folder: Int32) {
        var info = stat()
        guard fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        self.init(info)
    }

    private init(_ info: stat) {
        switch info.st_mode & S_IFMT {
        case S_IFREG: kind = .regular
        case S_IFDIR: kind = .folder
        case S_IFLNK: kind = .link
        default: kind = .other
        }
        size = Int(info.st_size)
        allocated = Int(info.st_blocks) * 512
        device = UInt64(truncatingIfNeeded: info.st_dev)
        inode = UInt64(truncatingIfNeeded: info.st_ino)
        links = Int(info.st_nlink)
        #if canImport(Glibc)
        modified = Int(info.st_mtim.tv_sec)
        #elseif canImport(Darwin)
        modified = Int(info.st_mtimespec.tv_sec)
        #endif
    }
}
