import Foundation
import MirrorFiles
import MirrorHTTP
import MirrorModel
import NIOPosix

extension S3Client {
    /// Writes the file at `path` to `key`, if `condition` holds, and returns the new ETag. A
    /// file under `multipartThreshold` is one PUT; a larger one a multipart upload of
    /// `partSize` parts (larger when the file would need over 10,000), read one part at a time
    /// on NIO's thread pool and sent one after another, so only one part is held at once. An
    /// upload that fails is aborted, so that its parts are not kept (and billed); one whose
    /// task is cancelled sends nothing more, abort included: a bucket's lifecycle rule
    /// (AbortIncompleteMultipartUpload) clears what it left.
    @discardableResult
    package func upload(_ key: String, fileAt path: String, condition: Condition? = nil) async throws(S3Error) -> String {
        let file: PartReader
        do {
            file = try await PartReader(path: path)
        } catch {
            throw .file("PUT", bucket: configuration.bucket, key: key, "cannot read \(path): \(error.reason)")
        }
        defer { file.release() }
        func read(_ offset: Int, _ count: Int) async throws(S3Error) -> [UInt8] {
            do {
                return try await file.read(at: offset, count: count)
            } catch {
                throw .file("PUT", bucket: configuration.bucket, key: key, "cannot read \(path): \(error.reason)")
            }
        }
        guard file.size >= configuration.multipartThreshold else {
            return try await put(key, try await read(0, file.size), condition: condition)
        }

        let partSize = Self.partSize(fileSize: file.size, preferred: configuration.partSize)
        let uploadID = try await createMultipartUpload(key)
        do throws(S3Error) {
            var parts: [(number: Int, etag: String)] = []
            var offset = 0
            while offset < file.size {
                let bytes = try await read(offset, min(partSize, file.size - offset))
                let number = parts.count + 1
                let response = try await exchange(
                    "PUT", key: key, query: [("partNumber", String(number)), ("uploadId", uploadID)], body: bytes)!
                parts.append((number, try etag(of: response, "PUT", key: key)))
                offset += bytes.count
            }
            return try await completeMultipartUpload(key, uploadID: uploadID, parts: parts, condition: condition)
        } catch {
            try? await abortMultipartUpload(key, uploadID: uploadID)
            throw error
        }
    }

    /// The part size for a file of `fileSize` bytes: `preferred`, at least S3's 5 MiB, and
    /// large enough (in whole MiB) that the file needs no more than 10,000 parts.
    static func partSize(fileSize: Int, preferred: Int) -> Int {
        let mebibyte = 1 << 20
        let fewest = (fileSize + S3Configuration.maximumParts - 1) / S3Configuration.maximumParts
        let fewestInMebibytes = (fewest + mebibyte - 1) / mebibyte * mebibyte
        return max(preferred, S3Configuration.minimumPartSize, fewestInMebibytes)
    }

    /// Starts a multipart upload to `key` and returns its upload id.
    func createMultipartUpload(_ key: String) async throws(S3Error) -> String {
        let response = try await exchange("POST", key: key, query: [("uploads", "")],
                                          headers: [("content-type", "application/octet-stream")])!
        guard let id = S3XML(response.body).text("UploadId"), !id.isEmpty else {
            throw .malformed("POST", bucket: configuration.bucket, key: key, status: response.status, "no UploadId")
        }
        return id
    }

    /// Joins the uploaded parts into the object, if `condition` holds; returns its ETag.
    /// S3 may answer 200 and then an error document: that is its error.
    func completeMultipartUpload(_ key: String, uploadID: String, parts: [(number: Int, etag: String)],
                                 condition: Condition?) async throws(S3Error) -> String {
        let document = "<CompleteMultipartUpload>"
            + parts.map { "<Part><PartNumber>\($0.number)</PartNumber><ETag>\($0.etag.markupEscaped)</ETag></Part>" }.joined()
            + "</CompleteMultipartUpload>"
        let response = try await exchange("POST", key: key, query: [("uploadId", uploadID)],
                                          headers: Self.headers(condition) + [("content-type", "application/xml")],
                                          body: Array(document.utf8))!
        let answer = S3XML(response.body)
        if answer.blocks("Error").count == 1 {
            throw .answered("POST", bucket: configuration.bucket, key: key, status: response.status, body: response.body,
                            retries: 0, redactor: try await keys.signing().redactor)
        }
        guard let etag = answer.text("ETag"), !etag.isEmpty else {
            throw .malformed("POST", bucket: configuration.bucket, key: key, status: response.status, "no ETag")
        }
        return etag
    }

    /// Drops an upload's parts.
    func abortMultipartUpload(_ key: String, uploadID: String) async throws(S3Error) {
        _ = try await exchange("DELETE", key: key, query: [("uploadId", uploadID)])
    }
}

/// A file read in pieces at given offsets on NIO's thread pool: a read blocks no task's thread.
private struct PartReader: Sendable {
    struct Failure: Error {
        let reason: String
    }

    let descriptor: Int32
    let size: Int

    init(path: String) async throws(Failure) {
        let opened: (Int32, Int)
        do {
            opened = try await NIOThreadPool.singleton.runIfActive { () throws -> (Int32, Int) in
                let descriptor: Int32
                do throws(FileError) {
                    descriptor = try FileSystem.openForReading(path)
                } catch {
                    throw Failure(reason: error.reason)
                }
                guard let info = FileStatus(descriptor: descriptor) else {
                    let reason = FileError.last.reason
                    try? FileSystem.close(descriptor)
                    throw Failure(reason: reason)
                }
                return (descriptor, info.size)
            }
        } catch {
            throw (error as? Failure) ?? Failure(reason: "\(error)")
        }
        (descriptor, size) = opened
    }

    /// `count` bytes from `offset`; fewer only if the file shrank, which fails.
    func read(at offset: Int, count: Int) async throws(Failure) -> [UInt8] {
        let descriptor = descriptor
        do {
            return try await NIOThreadPool.singleton.runIfActive { () throws -> [UInt8] in
                var bytes = [UInt8](repeating: 0, count: count)
                var done = 0
                while done < count {
                    let got = bytes.withUnsafeMutableBytes { buffer -> Result<Int, FileError> in
                        Result { () throws(FileError) in
                            try FileSystem.read(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]), at: offset + done)
                        }
                    }
                    switch got {
                    case let .failure(error):
                        throw Failure(reason: error.reason)
                    case .success(0):
                        throw Failure(reason: "the file shrank while it was read")
                    case let .success(read):
                        done += read
                    }
                }
                return bytes
            }
        } catch {
            throw (error as? Failure) ?? Failure(reason: "\(error)")
        }
    }

    func release() {
        try? FileSystem.close(descriptor)
    }
}
