/// The keys of a job file's top-level mapping, spelled as SPEC.md spells them.
import MirrorModel

enum FileKey: String, CaseIterable {
    case version, output, defaults, auth, jobs
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
    case incremental, deleted, parent, auth
    case maxWait = "max_wait"
    case propagateTrace = "propagate_trace"
    case shard, columns, explode, drop, hash, format, csv

    /// Keys that `defaults` may not set.
    var isJobOnly: Bool { self == .name || self == .url || self == .table }
}

/// The keys of a `columns:` entry's long form.
enum ColumnKey: String, CaseIterable {
    case path, type, index, stored
}

/// The keys of an `explode:` entry's long form.
enum ExplodeKey: String, CaseIterable {
    case path, columns
}

/// The keys of `csv:`.
enum CSVKey: String, CaseIterable {
    case delimiter
}

/// The keys of `hash:`.
enum HashKey: String, CaseIterable {
    case salt, paths
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

/// The keys of an `auth` definition; which apply depends on its `type` (`AuthType`).
enum AuthKey: String, CaseIterable {
    case type
    // bearer, basic, api_key
    case token, username, password, value
    // where a token or key goes
    case header, prefix, query, cookie
    // oauth2
    case grant
    case tokenURL = "token_url"
    case clientID = "client_id"
    case clientSecret = "client_secret"
    case clientAuth = "client_auth"
    case scope, audience, params
    case refreshToken = "refresh_token"
    case tokenStore = "token_store"
    case refreshMargin = "refresh_margin"
    case tokenPath = "token_path"
    case lifetime
    // jwt
    case algorithm
    case privateKey = "private_key"
    case privateKeyFile = "private_key_file"
    case keyID = "key_id"
    case issuer, subject, claims, exchange
    // session
    case login
    // aws_sigv4
    case accessKey = "access_key"
    case secretKey = "secret_key"
    case sessionToken = "session_token"
    case region, service
}

/// The words of an `auth` definition's `type`, and the keys each takes.
enum AuthType: String, CaseIterable {
    case bearer, basic
    case apiKey = "api_key"
    case oauth2, jwt, session
    case awsSigV4 = "aws_sigv4"

    /// Where a token goes: every type that sends one.
    private static let placement: Set<AuthKey> = [.header, .prefix, .query, .cookie]
    /// How a fetched token is read and kept.
    private static let fetched: Set<AuthKey> = [.tokenPath, .refreshMargin, .lifetime]

    var keys: Set<AuthKey> {
        let own: Set<AuthKey>
        switch self {
        case .bearer: own = Self.placement.union([.token])
        case .basic: own = [.username, .password]
        case .apiKey: own = Self.placement.union([.value])
        case .oauth2:
            own = Self.placement.union(Self.fetched).union([.grant, .tokenURL, .clientID, .clientSecret, .clientAuth, .scope,
                                                            .audience, .params, .refreshToken, .tokenStore])
        case .jwt:
            own = Self.placement.union(Self.fetched).union([.algorithm, .privateKey, .privateKeyFile, .keyID, .issuer, .subject,
                                                            .audience, .scope, .claims, .exchange, .tokenURL])
        case .session: own = Self.placement.union(Self.fetched).union([.login])
        case .awsSigV4: own = [.accessKey, .secretKey, .sessionToken, .region, .service]
        }
        return own.union([.type])
    }

    var required: [AuthKey] {
        switch self {
        case .bearer: [.token]
        case .basic: [.username, .password]
        case .apiKey: [.value]
        case .oauth2: [.tokenURL, .clientID]
        case .jwt: [.algorithm]
        case .session: [.login, .tokenPath]
        case .awsSigV4: [.accessKey, .secretKey, .region, .service]
        }
    }
}

/// The keys of a session's `login` request.
enum LoginKey: String, CaseIterable {
    case url, method, body, headers
}
