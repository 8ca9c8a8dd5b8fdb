/// A page's answer in the form its server sends it, made once, when the answer is kept in a
/// `PageCache`, and sent as it is by every answer from the cache after: a server makes its
/// own buffers here, so a kept page is never copied to be sent.
package protocol KeptAnswer: Sendable {
    /// `body` with `headers`, set in their order (see `ReplayAnswer`).
    init(status: Int, headers: [(String, String)], body: [UInt8])

    /// The bytes it holds, counted against the cache's limit: its body's (in memory, or in
    /// a file its server keeps for them) and its headers' names and values.
    var heldBytes: Int { get }
}

/// A kept answer as plain bytes and headers, for a caller that sends them as they are.
package struct KeptBytes: KeptAnswer {
    package let status: Int
    package let headers: [(String, String)]
    package let body: [UInt8]

    package init(status: Int, headers: [(String, String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    package var heldBytes: Int {
        body.capacity + headers.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count }
    }
}
