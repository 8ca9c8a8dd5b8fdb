/// How one download ended, as `_mirror_files` keeps it.
package struct FileOutcome: Sendable {
    package enum Status: String, Sendable {
        case ok, failed
        /// Not an absolute http(s) URL: never fetched.
        case refused
    }

    package var url: RedactedURL
    package var status: Status
    /// Relative to the output folder.
    package var path: String?
    package var size: Int?
    package var contentType: String?
    package var sha256: String?
    package var etag: String?
    package var lastModified: String?
    package var httpStatus: Int?
    package var error: String?
    package var time: String

    package init(
        url: RedactedURL,
        status: Status,
        path: String? = nil,
        size: Int? = nil,
        contentType: String? = nil,
        sha256: String? = nil,
        etag: String? = nil,
        lastModified: String? = nil,
        httpStatus: Int? = nil,
        error: String? = nil,
        time: String
    ) {
        self.url = url
        self.status = status
        self.path = path
        self.size = size
        self.contentType = contentType
        self.sha256 = sha256
        self.etag = etag
        self.lastModified = lastModified
        self.httpStatus = httpStatus
        self.error = error
        self.time = time
    }
}
