import Crypto
import Foundation
import Glibc
import MirrorModel

/// A file's size and SHA-256, read in 1 MiB pieces (and, when asked, copied to a new file,
/// flushed, on the way), so a database of any size is never held in memory.
enum FileDigest {
    static func read(_ source: String, copyingTo destination: String? = nil) throws(StateError) -> S3Client.Downloaded {
        func failure(_ what: String, _ path: String) -> StateError {
            StateError("cannot \(what) \(path): \(String(cString: strerror(errno)))")
        }
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw failure("read", source) }
        defer { close(input) }
        var output: Int32 = -1
        if let destination {
            output = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            guard output >= 0 else { throw failure("write", destination) }
        }
        defer { if output >= 0 { close(output) } }
        var hash = SHA256()
        var size = 0
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let got = buffer.withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress!, $0.count) }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { throw failure("read", source) }
            if got == 0 { break }
            hash.update(data: buffer[0..<got])
            var done = 0
            while output >= 0, done < got {
                let wrote = buffer.withUnsafeBytes { Glibc.write(output, $0.baseAddress! + done, got - done) }
                if wrote < 0, errno == EINTR { continue }
                guard wrote > 0 else { throw failure("write", destination ?? "") }
                done += wrote
            }
            size += got
        }
        if output >= 0, fsync(output) != 0 { throw failure("write", destination ?? "") }
        return S3Client.Downloaded(size: size, sha256: Hex.string(hash.finalize()))
    }
}
