import Foundation
import MirrorJSON
import MirrorModel
import Yams

/// One `auth` definition as read, with the secrets it holds (they join the redactor of
/// every job that uses it).
struct ReadAuth {
    package var spec: AuthSpec
    package var secrets: [Redactor.Secret]
}

/// `auth`: the named definitions at the top of the file, and a job's own.
extension JobFileReader {
    /// The top-level `auth` mapping: definition name → definition.
    mutating func readAuthDefinitions(_ node: Node, output: String?) -> [String: ReadAuth] {
        guard case let .mapping(map) = node else {
            error(node, "'auth' must be a mapping of definition names to definitions")
            return [:]
        }
        var definitions: [String: ReadAuth] = [:]
        var stores: [String: Node] = [:]
        for (keyNode, value) in map {
            guard let name = scalarText(keyNode), Self.isValidName(name) else {
                error(keyNode, "auth name '\(scalarText(keyNode) ?? "")' must use only letters, digits, '_' and '-'")
                continue
            }
            authNames.insert(name)
            guard let read = readAuth(value, name: name, key: "\(file)#\(name)", label: "auth '\(name)'") else { continue }
            if case let .oauth2(oauth) = read.spec.kind, let store = oauth.tokenStore {
                let storeNode = mapping(value, keys: AuthKey.self, context: nil, report: false)[.tokenStore]?.value
                if let first = stores[store] {
                    let at = first.mark.map { "\($0.line):\($0.column)" } ?? "?"
                    error(storeNode, "'token_store' of auth '\(name)' is the file another definition keeps its tokens in (at \(at))")
                }
                if let output, Paths.isInside(store, folder: output) {
                    error(storeNode, "'token_store' of auth '\(name)' must be outside the output folder, which is copied to devices")
                }
                stores[store] = storeNode ?? value
            }
            definitions[name] = read
        }
        return definitions
    }

    /// A job's `auth` (its own or from `defaults`): a definition's name, or a mapping.
    mutating func readJobAuth(_ job: JobNodes, name: String?) -> ReadAuth? {
        guard let node = job.keys[.auth]?.value else { return nil }
        if case .scalar = node {
            // `auth: shop_${SHOP}`: one definition per account, picked by the environment.
            guard let text = string(node, key: "auth")?.value else { return nil }
            if let read = authDefinitions[text] { return read }
            // A definition with errors of its own has been reported already.
            if authNames.contains(text) { return nil }
            let known = authDefinitions.keys.sorted()
            let hint = closestKey(to: text, in: known).map { " (did you mean '\($0)'?)" }
                ?? (known.isEmpty ? " (the file's top-level 'auth' defines none)" : " (defined: \(known.joined(separator: ", ")))")
            error(node, "auth '\(text)' of \(job.label) is not defined\(hint)")
            return nil
        }
        // A definition of its own, or of `defaults`: jobs that share the node share its token.
        let place = node.mark.map { "\($0.line):\($0.column)" } ?? name ?? ""
        return readAuth(node, name: name ?? "job", key: "\(file)@\(place)", label: "auth of \(job.label)")
    }

    /// One definition, checked against the keys its `type` takes.
    private mutating func readAuth(_ node: Node, name: String, key: String, label: String) -> ReadAuth? {
        guard case .mapping = node else {
            error(node, "\(label) must be a mapping with a 'type' (\(AuthType.allCases.map(\.rawValue).joined(separator: ", ")))")
            return nil
        }
        let keys = mapping(node, keys: AuthKey.self, context: label)
        guard let typeNode = keys[.type]?.value else {
            error(node, "\(label) is missing required key 'type' (\(AuthType.allCases.map(\.rawValue).joined(separator: ", ")))")
            return nil
        }
        guard let typeText = scalarText(typeNode), let type = AuthType(rawValue: typeText) else {
            let known = AuthType.allCases.map(\.rawValue)
            let hint = closestKey(to: scalarText(typeNode) ?? "", in: known).map { " (did you mean '\($0)'?)" } ?? ""
            error(typeNode, "'type' of \(label) must be one of \(known.joined(separator: ", ")), not '\(scalarText(typeNode) ?? "")'\(hint)")
            return nil
        }
        var failed = false
        for (authKey, pair) in keys where !type.keys.contains(authKey) {
            error(pair.key, "'\(authKey.rawValue)' does not apply to \(label) of type \(type.rawValue)")
            failed = true
        }
        for authKey in type.required where keys[authKey] == nil {
            error(node, "\(label) (type \(type.rawValue)) is missing required key '\(authKey.rawValue)'")
            failed = true
        }
        var read = AuthReading(keys: keys, label: label)
        let kind: AuthSpec.Kind?
        switch type {
        case .bearer:
            kind = read.text(.token, &self).map { .bearer(token: $0) }
        case .basic:
            let username = read.text(.username, &self), password = read.text(.password, &self)
            kind = username.flatMap { username in password.map { .basic(username: username, password: $0) } }
        case .apiKey:
            kind = read.text(.value, &self).map { .apiKey(value: $0) }
            if keys[.header] == nil, keys[.query] == nil, keys[.cookie] == nil {
                error(node, "\(label) (type api_key) must say where the key goes: 'header', 'query' or 'cookie'")
                failed = true
            }
        case .oauth2:
            kind = readOAuth2(&read).map { .oauth2($0) }
        case .jwt:
            kind = readJWT(&read).map { .jwt($0) }
        case .session:
            kind = readLogin(&read).map { .session($0) }
        case .awsSigV4:
            let access = read.text(.accessKey, &self), secret = read.text(.secretKey, &self)
            let token = read.text(.sessionToken, &self)
            let region = read.text(.region, &self), service = read.text(.service, &self)
            if let access, let secret, let region, let service {
                kind = .awsSigV4(AuthSpec.SigV4(accessKey: access, secretKey: secret, sessionToken: token, region: region,
                                                service: service))
            } else {
                kind = nil
            }
        }
        let placement = readPlacement(&read, type: type)
        var answer = AuthSpec.TokenAnswer(token: JSONPath("access_token")!)
        if case let .jwt(jwt)? = kind, jwt.exchange == .bearer { answer.token = JSONPath("token")! }
        if let pathNode = keys[.tokenPath]?.value, let path = path(pathNode, key: "token_path") { answer.token = path }
        if type != .jwt, let n = keys[.lifetime]?.value {
            answer.lifetime = duration(n, key: "lifetime", in: 1...(366 * 86_400), examples: "15m, 1h or 30d")
        }
        var margin = 60.0
        if let n = keys[.refreshMargin]?.value,
           let seconds = duration(n, key: "refresh_margin", in: 0...86_400, examples: "30s, 5m or 1h") {
            margin = seconds
        }
        guard let kind, !failed, read.complete else { return nil }
        let spec = AuthSpec(name: name, key: key, kind: kind, placement: placement, answer: answer, margin: margin,
                            secrets: read.secrets)
        // The forms the credentials are sent in are masked wherever their secrets are.
        return ReadAuth(spec: spec, secrets: read.secrets + spec.sentForms(of: read.secrets))
    }

    /// `header` (with `prefix`), `query` or `cookie`: one of them.
    private mutating func readPlacement(_ read: inout AuthReading, type: AuthType) -> AuthSpec.Placement {
        let given = [AuthKey.header, .query, .cookie].filter { read.keys[$0] != nil }
        if given.count > 1, let second = read.keys[given[1]] {
            error(second.key, "\(read.label) sends its token in one place: 'header', 'query' or 'cookie', not both '\(given[0].rawValue)' and '\(given[1].rawValue)'")
            read.complete = false
        }
        if read.keys[.prefix] != nil, read.keys[.header] == nil, type == .apiKey || !given.isEmpty, let prefix = read.keys[.prefix] {
            error(prefix.key, "'prefix' of \(read.label) goes with 'header'")
            read.complete = false
        }
        let keys = read.keys
        func name(_ key: AuthKey) -> String? { keys[key].flatMap { scalarText($0.value) } }
        for key in given {
            guard let text = name(key), !text.isEmpty, text.allSatisfy(\.isHeaderNameCharacter) else {
                error(read.keys[key]?.value, "'\(key.rawValue)' of \(read.label) must be a \(key == .header ? "header" : key == .query ? "query parameter" : "cookie") name")
                read.complete = false
                return .bearer
            }
        }
        if let header = name(.header) {
            // `Bearer ` is Authorization's scheme; any other header takes the token alone.
            let bearer = type != .apiKey && header.lowercased() == "authorization"
            let prefix = read.keys[.prefix].flatMap { scalarText($0.value) } ?? (bearer ? "Bearer " : "")
            return .header(name: header, prefix: prefix)
        }
        if let query = name(.query) { return .query(name: query) }
        if let cookie = name(.cookie) { return .cookie(name: cookie) }
        let prefix = read.keys[.prefix].flatMap { scalarText($0.value) } ?? "Bearer "
        return .header(name: "Authorization", prefix: prefix)
    }

    private mutating func readOAuth2(_ read: inout AuthReading) -> AuthSpec.OAuth2? {
        var grant = AuthSpec.Grant.clientCredentials
        if let n = read.keys[.grant]?.value {
            if let word = scalarText(n), let parsed = AuthSpec.Grant(rawValue: word) { grant = parsed } else {
                error(n, "'grant' of \(read.label) must be client_credentials or refresh_token, not '\(scalarText(n) ?? "")'")
                read.complete = false
            }
        }
        var clientAuth = AuthSpec.ClientAuth.post
        if let n = read.keys[.clientAuth]?.value {
            if let word = scalarText(n), let parsed = AuthSpec.ClientAuth(rawValue: word) { clientAuth = parsed } else {
                error(n, "'client_auth' of \(read.label) must be client_secret_basic or client_secret_post, not '\(scalarText(n) ?? "")'")
                read.complete = false
            }
        }
        let tokenURL = read.url(.tokenURL, &self)
        let clientID = read.text(.clientID, &self)
        let refreshToken = read.text(.refreshToken, &self)
        if grant == .refreshToken, refreshToken == nil, read.keys[.refreshToken] == nil {
            error(read.keys[.grant]?.value, "\(read.label) (grant refresh_token) is missing required key 'refresh_token'")
            read.complete = false
        }
        if grant == .clientCredentials, let n = read.keys[.refreshToken] {
            error(n.key, "'refresh_token' of \(read.label) goes with grant refresh_token")
            read.complete = false
        }
        var tokenStore: String?
        if let n = read.keys[.tokenStore]?.value, let text = string(n, key: "token_store") {
            tokenStore = resolvedPath(text.value)
            if grant != .refreshToken {
                error(n, "'token_store' of \(read.label) keeps rotated refresh tokens: it goes with grant refresh_token")
                read.complete = false
            }
        }
        guard let tokenURL, let clientID else { return nil }
        return AuthSpec.OAuth2(grant: grant, tokenURL: tokenURL, clientID: clientID, clientSecret: read.text(.clientSecret, &self),
                               clientAuth: clientAuth, scope: read.text(.scope, &self), audience: read.text(.audience, &self),
                               parameters: read.pairs(.params, &self), refreshToken: refreshToken, tokenStore: tokenStore)
    }

    private mutating func readJWT(_ read: inout AuthReading) -> AuthSpec.JWT? {
        var algorithm: AuthSpec.JWTAlgorithm?
        if let n = read.keys[.algorithm]?.value {
            algorithm = scalarText(n).flatMap(AuthSpec.JWTAlgorithm.init(rawValue:))
            if algorithm == nil {
                error(n, "'algorithm' of \(read.label) must be RS256 or ES256, not '\(scalarText(n) ?? "")'")
            }
        }
        var key = read.text(.privateKey, &self)
        if let n = read.keys[.privateKeyFile]?.value, let text = string(n, key: "private_key_file") {
            if read.keys[.privateKey] != nil {
                error(n, "\(read.label) takes its key from 'private_key' or 'private_key_file', not both")
                read.complete = false
            }
            let path = resolvedPath(text.value)
            if let contents = FileManager.default.contents(atPath: path), let pem = String(data: contents, encoding: .utf8) {
                key = pem
                // The key is a secret though it came from a file: it is masked as one.
                read.secrets.append(Redactor.Secret(name: "private_key_file", value: pem))
            } else {
                error(n, "'private_key_file' of \(read.label): cannot read '\(text.shown)'")
                read.complete = false
            }
        } else if read.keys[.privateKey] == nil {
            error(read.keys[.type]?.value, "\(read.label) (type jwt) needs 'private_key' or 'private_key_file'")
            read.complete = false
        }
        if let key, !key.contains("-----BEGIN") {
            error(read.keys[.privateKey]?.value ?? read.keys[.privateKeyFile]?.value,
                  "the key of \(read.label) must be PEM text ('-----BEGIN PRIVATE KEY-----' …)")
            read.complete = false
        }
        let tokenURL = read.url(.tokenURL, &self)
        var exchange: AuthSpec.JWT.Exchange = read.keys[.tokenURL] == nil ? .none : .assertion
        if let n = read.keys[.exchange]?.value {
            if let word = scalarText(n), let parsed = AuthSpec.JWT.Exchange(rawValue: word) { exchange = parsed } else {
                error(n, "'exchange' of \(read.label) must be none, assertion or bearer, not '\(scalarText(n) ?? "")'")
                read.complete = false
            }
        }
        if exchange != .none, read.keys[.tokenURL] == nil {
            error(read.keys[.exchange]?.value, "\(read.label) exchanges its assertion (\(exchange.rawValue)): it needs 'token_url'")
            read.complete = false
        }
        var lifetime = 3600.0
        if let n = read.keys[.lifetime]?.value, let seconds = duration(n, key: "lifetime", in: 10...86_400, examples: "10m or 1h") {
            lifetime = seconds
        }
        var claims: [(name: String, json: String)] = []
        if let n = read.keys[.claims]?.value {
            if case let .mapping(map) = n {
                for (claimKey, value) in map {
                    guard let claim = scalarText(claimKey), !claim.isEmpty else { continue }
                    var json = ""
                    appendJSON(value, to: &json, secrets: &read.secrets)
                    claims.append((claim, json))
                }
            } else {
                error(n, "'claims' of \(read.label) must be a mapping of claim names to values")
                read.complete = false
            }
        }
        guard let algorithm, let key else { return nil }
        return AuthSpec.JWT(algorithm: algorithm, privateKey: key, keyID: read.text(.keyID, &self),
                            issuer: read.text(.issuer, &self), subject: read.text(.subject, &self),
                            audience: read.text(.audience, &self), scope: read.text(.scope, &self), lifetime: lifetime,
                            claims: claims, exchange: exchange, tokenURL: tokenURL)
    }

    private mutating func readLogin(_ read: inout AuthReading) -> AuthSpec.Session? {
        guard let node = read.keys[.login]?.value else { return nil }
        let keys = mapping(node, keys: LoginKey.self, context: "'login' of \(read.label)")
        guard case .mapping = node else { return nil }
        var login = AuthReading(keys: [:], label: "'login' of \(read.label)")
        var url: String?
        if let n = keys[.url]?.value, let text = string(n, key: "url") {
            read.secrets += text.secrets
            if text.value.hasPrefix("http://") || text.value.hasPrefix("https://") { url = text.value } else {
                error(n, "'url' of \(login.label) must start with http:// or https://, not '\(text.shown)'")
            }
        } else if keys[.url] == nil {
            error(node, "\(login.label) is missing required key 'url'")
        }
        var method = keys[.body] == nil ? "GET" : "POST"
        if let n = keys[.method]?.value, let text = scalarText(n) {
            if ["GET", "POST"].contains(text.uppercased()) { method = text.uppercased() } else {
                error(n, "'method' of \(login.label) must be GET or POST, not '\(text)'")
            }
        }
        var body: String?
        if let n = keys[.body]?.value {
            var json = ""
            if case let .scalar(scalar) = n {
                if let text = interpolate(scalar.string, at: n) {
                    json = text.value
                    read.secrets += text.secrets
                }
            } else {
                appendJSON(n, to: &json, secrets: &read.secrets)
            }
            body = json
        }
        var headers: [(name: String, value: String)] = []
        if let n = keys[.headers]?.value {
            headers = login.pairs(n, name: "headers", &self)
            read.secrets += login.secrets
        }
        guard let url else { return nil }
        return AuthSpec.Session(url: url, method: method, body: body, headers: headers)
    }

    /// `~/…` in the user's home, a relative path against the job file's folder.
    private func resolvedPath(_ path: String) -> String {
        if path.hasPrefix("~/"), let home = environment["HOME"] {
            return (home as NSString).appendingPathComponent(String(path.dropFirst(2)))
        }
        return path.hasPrefix("/") || folder == "." ? path : (folder as NSString).appendingPathComponent(path)
    }
}

/// The values of one definition as they are read, gathering their secrets.
struct AuthReading {
    package var keys: [AuthKey: (key: Node, value: Node)]
    package let label: String
    package var secrets: [Redactor.Secret] = []
    /// False once a value was wrong.
    package var complete = true

    package init(keys: [AuthKey: (key: Node, value: Node)], label: String) {
        self.keys = keys
        self.label = label
    }

    /// A string value, `${…}` resolved.
    mutating func text(_ key: AuthKey, _ reader: inout JobFileReader) -> String? {
        guard let node = keys[key]?.value else { return nil }
        guard let text = reader.string(node, key: key.rawValue) else {
            complete = false
            return nil
        }
        secrets += text.secrets
        return text.value
    }

    /// An http(s) URL.
    mutating func url(_ key: AuthKey, _ reader: inout JobFileReader) -> String? {
        guard let node = keys[key]?.value, let text = reader.string(node, key: key.rawValue) else { return nil }
        secrets += text.secrets
        guard text.value.hasPrefix("http://") || text.value.hasPrefix("https://") else {
            reader.error(node, "'\(key.rawValue)' of \(label) must start with http:// or https://, not '\(text.shown)'")
            complete = false
            return nil
        }
        return text.value
    }

    /// A mapping of names to string values, in file order.
    mutating func pairs(_ key: AuthKey, _ reader: inout JobFileReader) -> [(name: String, value: String)] {
        guard let node = keys[key]?.value else { return [] }
        return pairs(node, name: key.rawValue, &reader)
    }

    mutating func pairs(_ node: Node, name key: String, _ reader: inout JobFileReader) -> [(name: String, value: String)] {
        guard case let .mapping(map) = node else {
            reader.error(node, "'\(key)' of \(label) must be a mapping of names to values")
            complete = false
            return []
        }
        var pairs: [(name: String, value: String)] = []
        for (nameNode, value) in map {
            guard let name = reader.scalarText(nameNode), !name.isEmpty,
                  let text = reader.string(value, key: name) else {
                complete = false
                continue
            }
            secrets += text.secrets
            pairs.append((name, text.value))
        }
        return pairs
    }
}
