import MirrorJSON

extension JobProposal {
    /// The job file: a comment above each detected key saying why it was chosen, and the
    /// notes atop it. `auth` is the text of an `auth:` value, written under the job as given.
    package func yaml(auth: String? = nil) -> String {
        var lines = ["# written by `mirror init` from the API's answers; check it with `mirror check`, then `mirror run` it"]
        lines += notes.map { "# " + Self.oneLine($0) }
        lines += ["version: 1", "jobs:"]
        return (lines + jobLines(auth: auth)).joined(separator: "\n") + "\n"
    }

    /// The job's item of the `jobs:` list, a comment above each key saying why it was chosen;
    /// `headers`, a flow mapping, follows `auth`.
    func jobLines(auth: String?, authWhy: String? = nil, headers: String? = nil) -> [String] {
        var lines = ["  - name: " + Self.scalar(name)]
        if let parent { lines.append("    parent: " + Self.scalar(parent)) }
        func key(_ name: String, _ value: String, why: String? = nil) {
            if let why { lines.append("    # " + Self.oneLine(why)) }
            lines.append("    \(name): \(value)")
        }
        /// `url`, then a POST's method and body.
        func request(why: String? = nil) {
            key("url", Self.scalar(url), why: why)
            if let method { key("method", method) }
            if let body { key("body", body) }
        }
        let pagingWhy = pagingWhy + (confirmation.map { " (\($0))" } ?? "")
        switch paging {
        case .single:
            request(why: pagingWhy)
        case let .nextURL(path):
            request()
            key("next", "{ url: \(Self.scalar(path)) }", why: pagingWhy)
        case .link:
            request()
            key("next", "link", why: pagingWhy)
        case let .cursor(path, parameter, hasMore):
            request(why: body?.contains("\"{cursor}\"") == true ? "the first request leaves the body's `\(parameter)` out"
                : "the first request leaves the `{cursor}` parameter out")
            key("next", "{ cursor: \(Self.scalar(path)) }", why: pagingWhy)
            if let hasMore { key("stop", "{ has_more: \(Self.scalar(hasMore)) }") }
        case let .numbers(_, from, step, stop):
            request(why: pagingWhy)
            key("pages", "{ from: \(from), step: \(step) }")
            switch stop {
            case let .total(path): key("stop", "{ total: \(Self.scalar(path)) }")
            case let .lastPage(path): key("stop", "{ last_page: \(Self.scalar(path)) }")
            case let .pages(path): key("stop", "{ pages: \(Self.scalar(path)) }")
            case let .short(size): key("stop", "{ short: \(size) }")
            case .empty: break
            }
        }
        key("records", Self.scalar(records.path), why: records.why)
        key("id", Self.scalar(id.path), why: id.why)
        key("table", Self.scalar(table))
        if let authWhy { lines.append("    # " + Self.oneLine(authWhy)) }
        if let auth {
            let value = auth.split(separator: "\n", omittingEmptySubsequences: false)
            lines.append("    auth:" + (value.first.map { $0.isEmpty ? "" : " " + $0 } ?? ""))
            lines += value.dropFirst().filter { !$0.allSatisfy(\.isWhitespace) }.map { "    " + $0 }
        }
        if let headers { key("headers", headers) }
        return lines
    }

    /// A plain scalar where YAML reads it back as the same string, else a double-quoted one
    /// (JSON's escapes are YAML's).
    static func scalar(_ text: String) -> String {
        let words: Set<String> = ["true", "false", "yes", "no", "on", "off", "y", "n", "null", "link"]
        let plain = text.first.map { $0.isASCII && ($0.isLetter || $0 == "_") } == true
            && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == ".") }
            && !words.contains(text.lowercased())
        return plain ? text : JSONText.quoted(text)
    }

    static func oneLine(_ text: String) -> String {
        String(text.map { $0.isNewline || $0.unicodeScalars.contains { $0.properties.generalCategory == .control } ? " " : $0 })
    }
}
