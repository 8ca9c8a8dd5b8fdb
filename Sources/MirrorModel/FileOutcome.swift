/// How one download ended, as `_mirror_files` keeps it.
public struct FileOutcome: Sendable {
    public enum Status: String, Sendable {
        case ok, failed
        /// Not an absolute http(s) URL: never fetched.
        case refused
    }

    public var url: RedactedURL
    public var status: Status
    /// Relative to the output folder.
    public var path: String?
    public var size: Int?
    public var contentType: String?
    public var sha256: String?
    public var etag: String?
    public var lastModified: String?
    public var httpStatus: Int?
    public var error: String?
    public var time: String

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
