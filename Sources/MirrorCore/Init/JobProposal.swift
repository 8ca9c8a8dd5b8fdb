/// `mirror init`: what a first answer of an API says of the job that walks it — where its
/// records are, their id, and how it pages — each choice with the reason it was made.
/// Pure: status, headers and body in, proposals out; `JobInitializer` requests and confirms.
import Foundation
import MirrorHTTP
import MirrorJSON
import MirrorModel
import MirrorWalk

package struct JobProposal: Sendable, Equatable {
    /// A path into the answer and why it was chosen.
    package struct Choice: Sendable, Equatable {
        package var path: String
        package var why: String
    }

    /// How the walk goes from one page to the next, as the job keys of docs/paging.md say it.
    package enum Paging: Sendable, Equatable {
        /// One request.
        case single
        /// `next: { url: path }`.
        case nextURL(path: String)
        /// `next: link`.
        case link
        /// `next: { cursor: path }`, sent back as `parameter={cursor}`, with `stop: { has_more: … }`.
        case cursor(path: String, parameter: String, hasMore: String?)
        /// `{page}` in the URL's `parameter`, `pages: { from, step }`, and how the walk ends.
        case numbers(parameter: String, from: Int, step: Int, stop: Stop)
    }

    /// How a `{page}` walk ends.
    package enum Stop: Sendable, Equatable {
        case total(String)
        case lastPage(String)
        case pages(String)
        case short(Int)
        case empty
    }

    package var name: String
    /// The job walked once per record of this one (`parent:`), `{parent.…}` in `url`.
    package var parent: String? = nil
    package var table: String
    /// The job's `url`, `{page}` or `{cursor}` in it.
    package var url: String
    /// `POST` for a search that pages in its body; nil for a GET.
    package var method: String? = nil
    /// The POST's `body:` as a flow mapping, `"{page}"` or `"{cursor}"` in it.
    package var body: String? = nil
    package var records: Choice
    package var id: Choice
    package var paging: Paging
    package var pagingWhy: String
    /// What the walk of two pages showed, once `JobInitializer` walked them.
    package var confirmation: String?
    /// What was seen and not chosen, or could not be decided: said on stderr and atop the file.
    package var notes: [String] = []
    /// Records on the first page.
    package var firstPageCount: Int
}

/// Why `mirror init` wrote no job.
package struct InitFailure: Error, Sendable, CustomStringConvertible {
    private enum Code: Sendable { case undecidable, remote, failed, exists }
    private let code: Code
    private let message: String

    /// The answers leave the job undecided: exit 2.
    package static func undecidable(_ message: String) -> InitFailure { InitFailure(code: .undecidable, message: message) }
    /// A description's `$ref` names a file on another host, which init never fetches: exit 2,
    /// whatever operation met it.
    package static func remote(_ message: String) -> InitFailure { InitFailure(code: .remote, message: message) }
    /// The API could not be asked, or the file not written: exit 1.
    package static func failed(_ message: String) -> InitFailure { InitFailure(code: .failed, message: message) }
    /// The job file is there already: exit 2.
    package static func exists(_ message: String) -> InitFailure { InitFailure(code: .exists, message: message) }

    /// The exit status: 1 when the API could not be asked or the file not written, else 2.
    package var status: Int32 { code == .failed ? 1 : 2 }
    /// Stops a description's reading, rather than leaving out the one operation that met it.
    package var stopsReading: Bool { code == .remote }
    package var description: String { message }
}

extension JobProposal {
    /// Members that hold the next page's URL, in the order they are looked for.
    static let nextURLPaths = ["next", "next_url", "nextUrl", "next_page_url", "nextPageUrl", "links.next", "links.next.href",
                               "_links.next.href", "/@odata.nextLink", "meta.next", "meta.next_url", "meta.links.next",
                               "pagination.next", "pagination.next_url", "pagination.links.next", "paging.next",
                               "links[rel=next].href"]
    /// Members that hold a cursor for the next page, each with the query parameters it is
    /// likely sent back in, the likeliest first.
    static let cursorPaths: [(path: String, parameters: [String])] = [
        ("next_cursor", ["cursor", "next_cursor", "after"]), ("nextCursor", ["cursor", "nextCursor", "after"]),
        ("meta.next_cursor", ["cursor", "next_cursor", "after"]), ("pagination.next_cursor", ["cursor", "next_cursor", "after"]),
        ("response_metadata.next_cursor", ["cursor"]), ("next_page_token", ["page_token", "pageToken", "next_page_token"]),
        ("nextPageToken", ["pageToken", "page_token"]), ("next_token", ["next_token", "token"]),
        ("nextToken", ["nextToken", "token"]), ("cursor", ["cursor", "after"]), ("next", ["cursor", "next", "after"]),
    ]
    /// Flags that say whether more pages follow.
    static let hasMorePaths = ["has_more", "hasMore", "meta.has_more", "meta.hasMore", "pagination.has_more", "has_next", "hasNext"]
    /// Where a page's numbers are echoed: at the top, or in one of these.
    static let echoes = ["", "meta.", "pagination.", "meta.pagination.", "paging."]

    /// The proposals for the job that walks the API whose answer to `url` this is, the
    /// likeliest first (several only when a cursor's query parameter is a guess).
    /// With `graphQL`, the answer is to a POST of that query, and only a Relay connection pages it.
    package static func detect(url: String, status: Int, headers: [String: String], body: [UInt8],
                               name: String, graphQL: GraphQLQuery? = nil) throws(InitFailure) -> [JobProposal] {
        let request = (graphQL == nil ? "GET " : "POST ") + url
        guard let document = try? JSONDocument(parsing: body) else {
            throw .undecidable("\(request): HTTP \(status): the answer is not JSON; no job written")
        }
        let root = document.root
        if let graphQL {
            // GraphQL says a failure with a 200: `errors` with no data.
            if let errors = root["errors"]?.elements, !errors.isEmpty, root["data"].map({ $0.kind == .null }) ?? true {
                throw .undecidable("\(request): HTTP \(status): GraphQL error: "
                    + GraphQLErrors.said(errors, redactor: .none) + "; no job written")
            }
            guard let connection = relayConnection(root) else {
                throw .undecidable("\(request): HTTP \(status): no Relay connection in the answer (`pageInfo { hasNextPage endCursor }` "
                    + "beside `nodes` or `edges` of objects); no job written: ask for them in the query")
            }
            return [try relayProposal(connection, url: url, request: request, status: status, name: name, graphQL: graphQL)]
        }
        if let connection = relayConnection(root) {
            return [try relayProposal(connection, url: url, request: request, status: status, name: name)]
        }
        var notes: [String] = []
        let records = try recordsChoice(root, request: request, status: status, notes: &notes)
        let elements = records.path == "." ? root.elements : root.value(at: JSONPath(records.path)!)?.elements ?? []
        let table = tableName(name)
        let id = try idChoice(elements, table: table, records: records.path, request: request, status: status)
        var base = JobProposal(name: name, table: table, url: url, records: records, id: id, paging: .single,
                               pagingWhy: "", notes: notes, firstPageCount: elements.count)

        // 1. A next URL in the body.
        var nullNext: String?
        for path in nextURLPaths {
            guard let value = root.value(at: JSONPath(path)!) else { continue }
            if let text = value.stringValue, isURLLike(text) {
                base.paging = .nextURL(path: path)
                base.pagingWhy = "the answer's `\(path)` holds the next page's URL"
                return [base]
            }
            if value.kind == .null, nullNext == nil { nullNext = path }
        }
        // 2. A Link header.
        if let link = headers["link"], LinkHeader.next(in: link, base: url) != nil {
            base.paging = .link
            base.pagingWhy = "the answer's Link header has rel=\"next\""
            return [base]
        }
        // 3. A cursor, with or without a flag saying more follow.
        let hasMore = hasMorePaths.first { root.value(at: JSONPath($0)!)?.kind == .bool }
        for (path, parameters) in cursorPaths {
            guard let value = root.value(at: JSONPath(path)!), value.kind == .string || value.kind == .number,
                  let text = value.scalarText, !text.isEmpty, !isURLLike(text) else { continue }
            let flag = hasMore.map { " and `\($0)` says whether more follow" } ?? ""
            return parameters.map { parameter in
                var proposal = base
                proposal.url = adding(parameter, "{cursor}", to: url)
                proposal.paging = .cursor(path: path, parameter: parameter, hasMore: hasMore)
                proposal.pagingWhy = "the answer's `\(path)` holds a cursor\(flag); it goes back as `\(parameter)`"
                return proposal
            }
        }
        if let hasMore, !elements.isEmpty {
            // Keyset paging, as Stripe's: the last record's id is where the next page starts.
            let last = (records.path == "." ? "-1" : records.path + ".-1") + "." + id.path
            return ["starting_after", "after", "cursor"].map { parameter in
                var proposal = base
                proposal.url = adding(parameter, "{cursor}", to: url)
                proposal.paging = .cursor(path: last, parameter: parameter, hasMore: hasMore)
                proposal.pagingWhy = "the answer's `\(hasMore)` says whether more follow, with no cursor: "
                    + "the last record's id goes back as `\(parameter)`"
                return proposal
            }
        }
        // 4. Page or offset numbers, in flask-smorest's X-Pagination header, in the URL or echoed in the body.
        if let numbers = paginationHeader(headers, url: url, count: elements.count)
            ?? pageNumbers(root, url: url, count: elements.count) {
            base.url = numbers.url
            base.paging = numbers.paging
            base.pagingWhy = numbers.why
            return [base]
        }
        if let nullNext {
            base.paging = .nextURL(path: nullNext)
            base.pagingWhy = "the answer's `\(nullNext)` is null: a next page's URL goes there, none on this one"
            return [base]
        }
        base.pagingWhy = "no next URL, Link header, cursor or page number in the answer: one request"
        base.notes.append("no paging seen: the job makes one request")
        return [base]
    }

    /// A Relay connection: an object whose `pageInfo` holds `endCursor` (a string, or null on
    /// the last page) and `hasNextPage` (a boolean), beside its records, `nodes` or `edges`
    /// (each `{cursor, node}`). Of several, the one of most records, then the shallowest.
    struct RelayConnection {
        var keys: [String]
        /// `nodes`; else `edges`.
        var nodes: Bool
        var records: [JSONValue]
    }

    static func relayConnection(_ root: JSONValue) -> RelayConnection? {
        var found: [RelayConnection] = []
        func visit(_ value: JSONValue, keys: [String]) {
            if let info = value["pageInfo"], info["hasNextPage"]?.kind == .bool,
               let end = info["endCursor"], end.kind == .string || end.kind == .null {
                if let nodes = value["nodes"], nodes.kind == .array, nodes.count > 0, nodes.elements.allSatisfy({ $0.kind == .object }) {
                    found.append(RelayConnection(keys: keys, nodes: true, records: nodes.elements))
                } else if let edges = value["edges"], edges.kind == .array, edges.count > 0,
                          edges.elements.allSatisfy({ $0.kind == .object && $0["node"]?.kind == .object }) {
                    found.append(RelayConnection(keys: keys, nodes: false, records: edges.elements))
                }
            }
            for (key, member) in value.members where member.kind == .object { visit(member, keys: keys + [key]) }
        }
        if root.kind == .object { visit(root, keys: []) }
        return found.min { a, b in
            a.records.count != b.records.count ? a.records.count > b.records.count : a.keys.count < b.keys.count
        }
    }

    /// The job that walks a Relay connection: its `nodes`, else its `edges`, and its
    /// `pageInfo.endCursor` sent back while `pageInfo.hasNextPage` is true: as `after` in the
    /// URL, or with `graphQL` in the query's `after:` variable of a POST's body.
    private static func relayProposal(_ connection: RelayConnection, url: String, request: String, status: Int,
                                      name: String, graphQL: GraphQLQuery? = nil) throws(InitFailure) -> JobProposal {
        let keys = connection.keys
        let records: Choice
        let id: Choice
        let table = tableName(name)
        if connection.nodes {
            records = Choice(path: path(keys + ["nodes"]), why: "the Relay connection's `nodes`, \(connection.records.count) of them")
            id = try idChoice(connection.records, table: table, records: records.path, request: request, status: status)
        } else {
            // The walk reads the records at one path, which names an array: `edges.*.node`
            // reads the first node alone. So the edges are the records, each stored whole.
            records = Choice(path: path(keys + ["edges"]), why: "the Relay connection's `edges`, \(connection.records.count) of them, "
                + "each stored whole as `{cursor, node}`: a records path names one array and cannot reach the nodes inside the edges")
            let nodes = connection.records.compactMap { $0["node"] }
            var found = try idChoice(nodes, table: table, records: records.path, request: request, status: status, within: ["node"])
            found.why += " (inside each edge's `node`)"
            id = found
        }
        let info = keys + ["pageInfo"]
        let parameter = graphQL?.cursorVariable ?? "after"
        var proposal = JobProposal(name: name, table: table, url: graphQL == nil ? adding("after", "{cursor}", to: url) : url,
                                   records: records, id: id,
                                   paging: .cursor(path: path(info + ["endCursor"]), parameter: parameter,
                                                   hasMore: path(info + ["hasNextPage"])),
                                   pagingWhy: "the answer's `\(path(info))` is Relay's: `endCursor` goes back as "
                                       + (graphQL == nil ? "`after`" : "the query's `$\(parameter)`") + ", `hasNextPage` says whether more follow",
                                   firstPageCount: connection.records.count)
        if let graphQL {
            proposal.method = "POST"
            proposal.body = graphQL.body
        }
        return proposal
    }

    /// The array of records: the top-level array, else the largest array of objects.
    private static func recordsChoice(_ root: JSONValue, request: String, status: Int,
                                      notes: inout [String]) throws(InitFailure) -> Choice {
        if root.kind == .array {
            guard root.elements.allSatisfy({ $0.kind == .object }), root.count > 0 else {
                throw .undecidable("\(request): HTTP \(status): the answer is an array of \(root.count == 0 ? "nothing" : "other values than objects"): "
                    + "no records to walk; no job written")
            }
            return Choice(path: ".", why: "the answer is an array of \(root.count) objects")
        }
        var found: [(path: String, keys: [String], count: Int)] = []
        func visit(_ value: JSONValue, keys: [String]) {
            for (key, member) in value.members {
                if member.kind == .object {
                    visit(member, keys: keys + [key])
                } else if member.kind == .array, member.count > 0, member.elements.allSatisfy({ $0.kind == .object }) {
                    found.append((path(keys + [key]), keys + [key], member.count))
                }
            }
        }
        visit(root, keys: [])
        found.sort { a, b in
            a.count != b.count ? a.count > b.count : a.keys.count != b.keys.count ? a.keys.count < b.keys.count : a.path < b.path
        }
        guard let chosen = found.first else {
            let members = root.members.map { "`\($0.key)`" }.prefix(8).joined(separator: ", ")
            throw .undecidable("\(request): HTTP \(status): no array of objects in the answer"
                + (root.kind == .object ? " (its members: \(members.isEmpty ? "none" : members))" : "")
                + "; no job written: name the records with `records:` in a job written by hand")
        }
        var why = "the array of objects, \(chosen.count) of them"
        if found.count > 1 {
            let seen = found.map { "`\($0.path)` (\($0.count))" }
            let list = seen.count == 2 ? seen.joined(separator: " and ") : seen.dropLast().joined(separator: ", ") + " and " + seen.last!
            let note = "\(count(found.count)) arrays of objects: \(list); chose `\(chosen.path)`"
            notes.append(note)
            why = "the largest of \(note.prefix { $0 != ":" })"
        }
        return Choice(path: chosen.path, why: why)
    }

    /// The id: a scalar member of every record, unique among them, named like an id.
    /// `within` are the keys from a record to the object holding its id (an edge's `node`).
    private static func idChoice(_ records: [JSONValue], table: String, records path: String, request: String,
                                 status: Int, within: [String] = []) throws(InitFailure) -> Choice {
        let singular = singular(table)
        let keys = records.first?.members.map(\.key) ?? []
        let candidates = keys.compactMap { key in idRank(key, table: table).map { (key, $0) } }.sorted { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }
        var rejected: [String] = []
        for (key, _) in candidates {
            var seen: [String: Int] = [:]
            var problem: String?
            for (index, record) in records.enumerated() {
                guard let value = record[key], value.kind == .string || value.kind == .number,
                      let text = value.scalarText, !text.isEmpty else {
                    problem = "record \(index + 1) has no usable `\(key)`"
                    break
                }
                let exact = (value.kind == .string ? "s" : "n") + text
                if let first = seen[exact] {
                    problem = "`\(key)` '\(text)' repeats (records \(first + 1) and \(index + 1))"
                    break
                }
                seen[exact] = index
            }
            guard let problem else {
                let big = records.contains { $0[key]?.kind == .number && $0[key]?.intValue == nil }
                return Choice(path: Self.path(within + [key]), why: "named like an id, present and unique in all \(records.count) records"
                    + (big ? "; numbers past 64 bits are kept exactly as written" : ""))
            }
            rejected.append(problem)
        }
        let shown = path == "." ? "the answer" : "`\(path)`"
        throw .undecidable("\(request): HTTP \(status): no id in the \(records.count) records of \(shown): "
            + (rejected.isEmpty ? "no member is named like an id (id, uuid, \(singular)_id, key, slug, …Id)"
                                : rejected.joined(separator: "; "))
            + "; no job written")
    }

    /// How much a member's name looks like the id of a `table`'s records: 0 the likeliest, nil not at all.
    static func idRank(_ key: String, table: String) -> Int? {
        let singular = singular(table)
        switch key {
        case "id": return 0
        case "uuid": return 1
        case table + "_id", singular + "_id": return 2
        case "key": return 3
        case "slug": return 4
        case "_id": return 5
        default:
            return key.count > 2 && (key.hasSuffix("Id") || key.hasSuffix("_id") || key.hasSuffix("ID")) ? 6 : nil
        }
    }

    static func singular(_ name: String) -> String { name.hasSuffix("s") ? String(name.dropLast()) : name }

    /// Page or offset numbers in the URL's query or echoed in the body, with their stop.
    private static func pageNumbers(_ root: JSONValue, url: String,
                                    count: Int) -> (url: String, paging: Paging, why: String)? {
        let query = queryPairs(url)
        func inQuery(_ names: [String]) -> (String, Int)? {
            for name in names { if let value = query.first(where: { $0.0 == name }).flatMap({ Int($0.1) }) { return (name, value) } }
            return nil
        }
        func echoed(_ names: [String]) -> (String, Int)? {
            for prefix in echoes {
                for name in names {
                    guard let path = JSONPath(prefix + name), let value = root.value(at: path) else { continue }
                    if let number = value.intValue ?? value.stringValue.flatMap({ Int($0) }) { return (prefix + name, number) }
                }
            }
            return nil
        }
        let sizeNames = ["per_page", "limit", "page_size", "pageSize", "size", "perPage"]
        let size = inQuery(sizeNames)?.1 ?? echoed(sizeNames)?.1
        let total = echoed(["total", "count", "total_count", "totalCount", "total_results", "totalResults"])
        let offset = inQuery(["offset"]).map { (name: $0.0, value: $0.1, seen: "the URL's `offset=\($0.1)`") }
            ?? echoed(["offset"]).map { (name: "offset", value: $0.1, seen: "the answer's `\($0.0)` (\($0.1))") }
        if let offset {
            let step = size ?? count
            guard step > 0 else { return nil }
            var template = adding("offset", "{page}", to: url)
            if size != nil, inQuery(sizeNames) == nil { template = adding("limit", String(step), to: template) }
            let stop: Stop = total.map { .total($0.0) } ?? (size != nil ? .short(step) : .empty)
            return (template, .numbers(parameter: "offset", from: offset.value, step: step, stop: stop),
                    "\(offset.seen): an offset that moves by \(step) a page; " + stopWhy(stop, total: total?.1))
        }
        let pageNames = ["page", "page_number", "pageNumber", "p"]
        let page = inQuery(pageNames).map { (name: $0.0, value: $0.1, seen: "the URL's `\($0.0)=\($0.1)`") }
            ?? echoed(["page", "current_page", "currentPage", "page_number", "pageNumber"]).map {
                (name: "page", value: $0.1, seen: "the answer's `\($0.0)` (\($0.1))")
            }
        guard let page else { return nil }
        let template = inQuery(pageNames) != nil ? replacing(page.name, with: "{page}", in: url) : adding("page", "{page}", to: url)
        let stop: Stop
        if let last = echoed(["last_page", "lastPage"]) {
            stop = .lastPage(last.0)
        } else if let pages = echoed(["total_pages", "totalPages", "page_count", "pageCount", "num_pages", "pages"]) {
            stop = .pages(pages.0)
        } else if let total {
            stop = .total(total.0)
        } else if let size {
            stop = .short(size)
        } else {
            stop = .empty
        }
        return (template, .numbers(parameter: page.name, from: page.value, step: 1, stop: stop),
                "\(page.seen): page numbers; " + stopWhy(stop, total: total?.1))
    }

    /// flask-smorest's `X-Pagination: {"total": 53, "total_pages": 6, "page": 1, "next_page": 2, …}`
    /// over a page that has a next one. The walk reads no stop from a header, so the first page,
    /// full since another follows, gives the size a shorter last page falls under.
    private static func paginationHeader(_ headers: [String: String], url: String,
                                         count: Int) -> (url: String, paging: Paging, why: String)? {
        guard count > 0, let text = headers["x-pagination"], let header = try? JSONDocument(parsing: Array(text.utf8)),
              let page = header.root["page"]?.intValue, let next = header.root["next_page"]?.intValue else { return nil }
        let named = queryPairs(url).contains { $0.0 == "page" }
        let template = named ? replacing("page", with: "{page}", in: url) : adding("page", "{page}", to: url)
        let stop = Stop.short(count)
        let pages = header.root["total_pages"]?.intValue.map { " (the header's `total_pages` is \($0), and a walk reads no stop from a header)" } ?? ""
        return (template, .numbers(parameter: "page", from: page, step: 1, stop: stop),
                "the answer's X-Pagination header names page \(page) and a next page \(next): page numbers; "
                    + stopWhy(stop, total: nil) + pages)
    }

    static func stopWhy(_ stop: Stop, total: Int?) -> String {
        switch stop {
        case let .total(path): return "the walk ends when the records reach `\(path)`\(total.map { " (\($0))" } ?? "")"
        case let .lastPage(path): return "the walk ends at the page `\(path)` names"
        case let .pages(path): return "the walk ends after the `\(path)` pages"
        case let .short(size): return "a page of fewer than \(size) records is the last"
        case .empty: return "no total, last page or page size in the answer: an empty page ends the walk"
        }
    }

    /// A job's name from the URL's last path segment (`/api/items/` → `items`, `/db/t.json` → `t`).
    package static func name(fromURL url: String) -> String {
        let path = URL(string: url)?.path ?? ""
        let last = path.split(separator: "/").last.map { $0.split(separator: ".").first.map(String.init) ?? String($0) } ?? ""
        var name = String(last.map { $0.isLetter && $0.isASCII || $0.isNumber && $0.isASCII || $0 == "_" || $0 == "-" ? $0 : "_" })
        if name.isEmpty || name.allSatisfy({ $0 == "_" }) { name = URL(string: url)?.host?.split(separator: ".").first.map(String.init) ?? "" }
        return name.isEmpty ? "records" : name
    }

    /// A table name from a job's: `-` as `_`, and `t_` before one SQLite would refuse or keep.
    static func tableName(_ name: String) -> String {
        let table = name.replacingOccurrences(of: "-", with: "_")
        let lower = table.lowercased()
        if table.first?.isNumber == true || lower.hasPrefix("sqlite") || lower.hasPrefix("_mirror_") || lower == "grdb_migrations" {
            return "t_" + table
        }
        return table
    }

    /// `two`, `three`, … for the counts a note names; digits past nine.
    static func count(_ n: Int) -> String {
        let words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
        return words.indices.contains(n) ? words[n] : String(n)
    }

    /// A dot path, or a JSON Pointer for keys a dot path cannot name.
    static func path(_ keys: [String]) -> String {
        let plain = keys.allSatisfy { key in
            !key.isEmpty && key != "*" && Int(key) == nil
                && key.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) && $0.isASCII || $0 == "_" || $0 == "-" || $0 == "$" }
        }
        if plain { return keys.joined(separator: ".") }
        return keys.map { "/" + $0.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1") }.joined()
    }

    static func pathText(_ key: String) -> String { path([key]) }

    static func isURLLike(_ text: String) -> Bool {
        let lower = text.prefix(8).lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://") || text.hasPrefix("/") || text.hasPrefix("?")
    }

    /// The query's name-value pairs as written.
    static func queryPairs(_ url: String) -> [(String, String)] {
        guard let mark = url.firstIndex(of: "?") else { return [] }
        let query = url[url.index(after: mark)...].prefix { $0 != "#" }
        return query.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(parts[0]).removingPercentEncoding ?? String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
        }
    }

    /// `url` with the value of its query parameter `name` replaced.
    static func replacing(_ name: String, with value: String, in url: String) -> String {
        guard let mark = url.firstIndex(of: "?") else { return url }
        let pairs = url[url.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: false).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(parts[0]).removingPercentEncoding ?? String(parts[0])) == name ? parts[0] + "=" + value : String(pair)
        }
        return url[..<mark] + "?" + pairs.joined(separator: "&")
    }

    /// `url` with `name=value` added to its query.
    static func adding(_ name: String, _ value: String, to url: String) -> String {
        if queryPairs(url).contains(where: { $0.0 == name }) { return replacing(name, with: value, in: url) }
        let separator = url.contains("?") ? (url.hasSuffix("?") || url.hasSuffix("&") ? "" : "&") : "?"
        return url + separator + name + "=" + value
    }
}
