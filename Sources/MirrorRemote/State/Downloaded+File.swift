import MirrorFiles
import MirrorModel

extension S3Client.Downloaded {
    /// A file's size and SHA-256, read in pieces and, when asked, copied to a new file,
    /// flushed, on the way (`FileDigest`).
    static func read(_ source: String, copyingTo destination: String? = nil) throws(StateError) -> S3Client.Downloaded {
        do throws(FileDigest.Failure) {
            let read = try FileDigest.read(source, copyingTo: destination)
            return S3Client.Downloaded(size: read.size, sha256: Hex.string(read.sha256))
        } catch {
            throw StateError("cannot \(error.writing ? "write" : "read") \(error.path): \(error.error.reason)")
        }
    }
}
