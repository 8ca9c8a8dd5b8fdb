/// The answer to a request for a page (`ReplayedPages`): a status, headers, and either bytes
/// or a page to stream a piece at a time. Headers are set in their order: a later one of a
/// name replaces an earlier one, as the API's own `Content-Type` replaces the default.
package enum ReplayAnswer: Sendable {
    /// Held whole: a 404, with the pages the mirror holds closest to the request, or a 304.
    case whole(status: Int, headers: [(String, String)], body: [UInt8])
    /// A page no larger than `ReplayedPages.chunk`, as the cache holds it (in its server's
    /// form, `PageCache.form`); when `notModified`, sent as a 304 with its headers but
    /// `Content-Type`, and no body.
    case kept(PageCache.Entry, notModified: Bool)
    /// A larger page: `page.first`, then its records a piece at a time, then `page.last`.
    case streamed(status: Int, headers: [(String, String)], page: PageStream)
}
