package import Crypto

/// A file's size and SHA-256, read in 1 MiB pieces (and, when asked, copied to a new file,
/// flushed, on the way), so a database of any size is never held in memory.
package enum FileDigest {
    /// Why a file could not be read or its copy written.
    package struct Failure: Error, Sendable {
        /// The file that failed: the one read, or the copy.
        package let path: String
        /// Whether the copy failed, not the read.
        package let writing: Bool
        package let error: FileError
    }

    package static func read(_ source: String, copyingTo destination: String? = nil)
        throws(Failure) -> (size: Int, sha256: SHA256.Digest)
    {
        let input: Int32
        do throws(FileError) {
            input = try FileSystem.openForReading(source)
        } catch {
            throw Failure(path: source, writing: false, error: error)
        }
        defer { _ = try? FileSystem.close(input) }
        var output: Int32 = -1
        if let destination {
            do throws(FileError) {
                output = try FileSystem.createNew(destination)
            } catch {
                throw Failure(path: destination, writing: true, error: error)
            }
        }
        defer { if output >= 0 { _ = try? FileSystem.close(output) } }
        var hash = SHA256()
        var size = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let got: Int
            do throws(FileError) {
                got = try FileSystem.read(input, into: buffer)
            } catch {
                throw Failure(path: source, writing: false, error: error)
            }
            if got == 0 { break }
            let piece = UnsafeRawBufferPointer(rebasing: buffer[0..<got])
            hash.update(bufferPointer: piece)
            if output >= 0 {
                do throws(FileError) {
                    try FileSystem.write(piece, to: output)
                } catch {
                    throw Failure(path: destination ?? "", writing: true, error: error)
                }
            }
            size += got
        }
        if output >= 0 {
            do throws(FileError) {
                try FileSystem.flush(output)
            } catch {
                throw Failure(path: destination ?? "", writing: true, error: error)
            }
        }
        return (size, hash.finalize())
    }
}
