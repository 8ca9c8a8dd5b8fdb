/// The keys of a job file's top-level mapping, spelled as SPEC.md spells them.
import MirrorModel

enum FileKey: String, CaseIterable {
    case version, output, defaults, jobs
    case notSecret = "not_secret"
}

/// The keys of a job (and of `defaults`), spelled as SPEC.md spells them.
enum JobKey: String, CaseIterable {
    case name, url, method, body, headers, pages, next, records, id, table, database, account, stop
    case onChange = "on_change"
    case prune
    case shareTable = "share_table"
    case timeout, retries
    case rateLimit = "rate_limit"
    case concurrency
    case refreshAfter = "refresh_after"
    case validate, downloads
    case downloadConcurrency = "download_concurrency"
    case maxFileSize = "max_file_size"
    case minDownloadRate = "min_download_rate"
    case maxPageSize = "max_page_size"
    case incremental, deleted, parent
    case maxWait = "max_wait"

    /// Keys that `defaults` may not set.
    var isJobOnly: Bool { self == .name || self == .url || self == .table }
}

enum PagesKey: String, CaseIterable {
    case from, to, step
}

/// The long forms of `next`: one of them, saying what the value is.
enum NextKey: String, CaseIterable {
    case url, cursor, header, scroll
    /// With `scroll`: the URL of the requests after the first.
    case request
}

enum IncrementalKey: String, CaseIterable {
    case path, from, initial, lookback
}

enum DeletedKey: String, CaseIterable {
    case path, equals
}

enum StopKey: String, CaseIterable {
    case empty, known, status
    case lastPage = "last_page"
    case total
    case hasMore = "has_more"
    case short, pages
}

/// Suggests the closest known key for a misspelt one, as compilers do.
package func closestKey(to word: String, in candidates: [String]) -> String? {
    var best: (key: String, distance: Int)?
    for candidate in candidates {
        let distance = editDistance(Array(word.lowercased()), Array(candidate))
        if distance <= max(1, candidate.count / 3), distance < (best?.distance ?? .max) {
            best = (candidate, distance)
        }
    }
    return best?.key
}

/// Optimal string alignment distance: Levenshtein plus adjacent transpositions.
private func editDistance(_ a: [Character], _ b: [Character]) -> Int {
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var table = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
    for i in 0...a.count { table[i][0] = i }
    for j in 0...b.count { table[0][j] = j }
    for i in 1...a.count {
        for j in 1...b.count {
            let cost = a[i - 1] == b[j - 1] ? 0 : 1
            table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
            if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
            }
        }
    }
    return table[a.count][b.count]
}
