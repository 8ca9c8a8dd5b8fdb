import Foundation
import MirrorJobFile
import MirrorJSON

/// `mirror init --openapi`: the jobs an OpenAPI 3.x description says walk its lists, one per
/// GET (or POST search) whose 200 answer is an array of objects or an object holding one, with the paging its
/// parameters and answer schema show, the id its records' schema names, the `auth:`
/// definitions its security schemes give, and a child job for a list under another list's
/// id. What it cannot walk is said as a comment. Pure: a file in, the job file's text out.
package struct OpenAPIJobs: Sendable {
    /// A top-level `auth:` definition: its name and its lines under that name.
    package struct Auth: Sendable, Equatable {
        package var name: String
        package var lines: [String]
        /// An oauth2 clientCredentials flow's scopes, in the order written; nil for another scheme.
        package var flowScopes: [String]? = nil
    }

    /// A job and the name of the `auth:` definition it uses.
    package struct Job: Sendable, Equatable {
        package var proposal: JobProposal
        package var auth: String?
        /// The scopes the operation's security requirement names.
        package var scopes: [String] = []
        /// `headers:` as a flow mapping: schemes sent beside `auth:`.
        package var headers: String? = nil
        /// Why `auth:` is the one chosen, when there was a choice.
        package var authWhy: String? = nil
    }

    package var jobs: [Job]
    package var auth: [Auth]
    /// `GET /search: the 200 response has no array of objects`, one for each GET or POST search not written.
    package var refused: [String]
    /// What was not decided for the whole file: said atop it.
    package var notes: [String]
    /// The description's file name, for the file's first line.
    package var source: String

    /// Query parameters that take the next page's cursor.
    static let cursorParameters = ["cursor", "starting_after", "page_token", "pageToken", "after"]
    static let pageParameters = ["page", "page_number", "pageNumber"]
    static let sizeParameters = ["per_page", "page_size", "pageSize", "perPage", "size", "limit"]
    static let totalMembers = ["total", "count", "total_count", "totalCount", "total_results", "totalResults"]
    static let pagesMembers = ["total_pages", "totalPages", "pages", "page_count", "pageCount", "num_pages"]
    /// Members that hold a list's records when an answer has several arrays of objects, the likeliest first.
    static let recordMembers = ["data", "results", "items"]

    /// The jobs of the description at `path`; `baseURL` replaces its `servers[0].url`.
    package static func read(path: String, baseURL: String?) throws(InitFailure) -> OpenAPIJobs {
        let document = try OpenAPIDocument(path: path)
        let root = document.root
        let shown = (path as NSString).lastPathComponent
        guard let version = root.node["openapi"]?.text, version.hasPrefix("3.") else {
            let said = root.node["openapi"]?.text.map { "its `openapi` is '\($0)'" }
                ?? root.node["swagger"]?.text.map { "it is Swagger '\($0)'" } ?? "it has no `openapi` key"
            throw .undecidable("\(path) is not an OpenAPI 3.x description (\(said)); no job written")
        }
        var base = baseURL
        if base == nil, let server = root["servers"]?.node.elements.first {
            var url = server["url"]?.text ?? ""
            for (name, variable) in server["variables"]?.members ?? [] {
                url = url.replacingOccurrences(of: "{\(name)}", with: variable["default"]?.text ?? "")
            }
            guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
                throw .undecidable("\(path): servers[0].url '\(url)' is not an http or https URL: give the API's with --base-url; no job written")
            }
            base = url
        }
        guard var base else {
            throw .undecidable("\(path) names no server: give the API's URL with --base-url; no job written")
        }
        while base.hasSuffix("/") { base.removeLast() }

        var result = OpenAPIJobs(jobs: [], auth: [], refused: [], notes: [], source: shown)
        let schemes = root["components"]?["securitySchemes"]
        let globalSecurity = root["security"]
        var lists: [(path: String, job: Job)] = []
        var children: [(path: String, parameter: String, job: Job)] = []
        for (apiPath, item) in root["paths"]?.node.members ?? [] {
            let pathItem = try document.resolve(OpenAPIDocument.Located(node: item, file: root.file))
            for method in ["get", "post"] {
                guard let operation = pathItem[method] else { continue }
                let label = "\(method.uppercased()) \(apiPath)"
                do throws(Refusal) {
                    let proposal = try proposal(document, path: apiPath, pathItem: pathItem, operation: operation, base: base,
                                                post: method == "post")
                    let security = try security(document, operation: operation, global: globalSecurity, schemes: schemes,
                                                label: label, into: &result)
                    let job = Job(proposal: proposal, auth: security?.name, scopes: security?.scopes ?? [],
                                  headers: security?.headers, authWhy: security?.why)
                    let parameters = pathParameters(apiPath)
                    switch parameters.count {
                    case 0: lists.append((apiPath, job))
                    case 1: children.append((apiPath, parameters[0], job))
                    default: throw Refusal("\(parameters.count) path parameters (\(parameters.map { "{\($0)}" }.joined(separator: ", "))): "
                        + "a child job takes one parent's id")
                    }
                } catch {
                    if let stop = error.stop { throw stop }
                    // A POST that answers no list creates or changes a thing: not a job, nor worth a comment.
                    if method == "post", error.notAList { continue }
                    result.refused.append("\(label): \(error.reason)")
                }
            }
        }
        // Lists are named before their children, so a child names its parent as written.
        var taken: Set<String> = []
        for index in lists.indices { name(&lists[index].job, taken: &taken) }
        var jobs = lists.map(\.job)
        for child in children {
            let prefix = child.path.range(of: "/{\(child.parameter)}").map { String(child.path[..<$0.lowerBound]) }
            guard let parent = lists.first(where: { $0.path == prefix }),
                  child.parameter == "id" || child.parameter == parent.job.proposal.id.path
                    || JobProposal.idRank(child.parameter, table: lastSegment(parent.path)) == 2
                    || child.parameter == JobProposal.singular(lastSegment(parent.path)) + "Id" else {
                result.refused.append("\(child.job.proposal.method ?? "GET") \(child.path): its path parameter {\(child.parameter)} names no list's id "
                    + "(a child job's parent is the list at the path before it)")
                continue
            }
            var job = child.job
            let parentID = parent.job.proposal.id.path
            job.proposal.parent = parent.job.proposal.name
            job.proposal.url = job.proposal.url.replacingOccurrences(of: "{\(child.parameter)}", with: "{parent.\(parentID)}")
            job.proposal.pagingWhy += "; walked once per record of `\(parent.job.proposal.name)`, its `\(parentID)` in the path"
            jobs.append(job)
        }
        // Names from paths can meet (`/pets` and `/v2/pets`): the later ones get a number.
        for index in jobs.indices.dropFirst(lists.count) { name(&jobs[index], taken: &taken) }
        guard !jobs.isEmpty else {
            throw .undecidable("\(path): no GET or POST search answers a list of objects"
                + (result.refused.isEmpty ? "" : " (" + result.refused.joined(separator: "; ") + ")") + "; no job written")
        }
        result.jobs = jobs
        for index in result.auth.indices {
            guard let declared = result.auth[index].flowScopes else { continue }
            var named: [String] = []
            for job in jobs where job.auth == result.auth[index].name {
                named += job.scopes.filter { !named.contains($0) }
            }
            let scopes = named.isEmpty ? declared
                : declared.filter(named.contains) + named.filter { !declared.contains($0) }.sorted()
            guard !scopes.isEmpty else { continue }
            result.auth[index].lines += [named.isEmpty ? "# the scopes of its clientCredentials flow: no written job's requirement names one"
                                            : "# the scopes the written jobs' security requirements name",
                                         "scope: " + JobProposal.scalar(scopes.joined(separator: " "))]
        }
        return result
    }

    /// Reads the description at `path` and writes its job file to `out` (default
    /// `jobs/NAME.yaml`, NAME the description's), which must not exist unless `force`.
    package static func write(path: String, baseURL: String?, out: String?, force: Bool) throws(InitFailure) -> (path: String, jobs: OpenAPIJobs) {
        let target = out ?? "jobs/\(((path as NSString).lastPathComponent as NSString).deletingPathExtension).yaml"
        if !force, FileManager.default.fileExists(atPath: target) {
            throw .exists("\(target) exists: give another --out, or --force to overwrite it")
        }
        let jobs = try read(path: path, baseURL: baseURL)
        do {
            let folder = (target as NSString).deletingLastPathComponent
            if !folder.isEmpty { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
            try Data(jobs.yaml().utf8).write(to: URL(fileURLWithPath: target), options: .atomic)
        } catch {
            throw .failed("cannot write \(target): \(JobFileLoader.reason(error))")
        }
        return (target, jobs)
    }

    /// Names the job and its table from its table's name, with `_2`, `_3`, … when that is taken.
    private static func name(_ job: inout Job, taken: inout Set<String>) {
        var name = job.proposal.table
        var number = 2
        while taken.contains(name) { name = job.proposal.table + "_\(number)"; number += 1 }
        taken.insert(name)
        job.proposal.name = name
        job.proposal.table = name
    }

    /// Why an operation is written as a comment.
    struct Refusal: Error {
        let reason: String
        /// What stops the whole description rather than this operation (a `$ref` on another host).
        var stop: InitFailure?
        /// The operation answers no list (or, a POST, is no search).
        var notAList = false
        init(_ reason: String, notAList: Bool = false) {
            self.reason = reason
            self.notAList = notAList
        }
        init(_ failure: InitFailure) {
            reason = failure.description.replacingOccurrences(of: "; no job written", with: "")
            stop = failure.stopsReading ? failure : nil
        }
    }

    /// The job of one GET, or of a POST search (`…/search`, or a JSON body with paging
    /// members), its paging values in the body; or why there is none.
    private static func proposal(_ document: OpenAPIDocument, path: String, pathItem: OpenAPIDocument.Located,
                                 operation: OpenAPIDocument.Located, base: String, post: Bool) throws(Refusal) -> JobProposal {
        do {
            let operation = try document.resolve(operation)
            var body: (properties: [(name: String, schema: OpenAPIDocument.Located)], required: Set<String>)?
            if post {
                if let requestBody = operation["requestBody"], let content = try document.resolve(requestBody)["content"],
                   let json = content.node.members.first(where: { $0.key.lowercased().contains("json") }), let schema = json.value["schema"] {
                    body = try document.properties(.init(node: schema, file: content.file))
                }
                let last = path.split(separator: "/").last.map { $0.lowercased() } ?? ""
                let paging = cursorParameters + pageParameters + sizeParameters + ["offset"]
                guard last == "search" || last.hasSuffix(":search") || body?.properties.contains(where: { paging.contains($0.name) }) == true else {
                    throw Refusal("neither a search nor a body with paging members", notAList: true)
                }
            }
            guard let response = operation["responses"]?["200"] else { throw Refusal("no 200 response", notAList: true) }
            let content = try document.resolve(response)["content"]
            guard let json = content?.node.members.first(where: { $0.key.lowercased().contains("json") }),
                  let schema = json.value["schema"] else {
                throw Refusal("the 200 response has no JSON schema", notAList: true)
            }
            let answer = OpenAPIDocument.Located(node: schema, file: content!.file)
            let table = JobProposal.tableName(tableName(path))
            // The records: the answer itself, or its one array of objects.
            var records: JobProposal.Choice
            let item: OpenAPIDocument.Located
            if let items = try document.objectItems(answer) {
                records = .init(path: ".", why: "the 200 response's schema is an array of objects")
                item = items
            } else {
                var found: [(name: String, item: OpenAPIDocument.Located)] = []
                for property in try document.properties(answer).properties {
                    if let items = try document.objectItems(property.schema) { found.append((property.name, items)) }
                }
                guard let chosen = found.count == 1 ? found[0] : recordMembers.lazy.compactMap({ name in found.first { $0.name == name } }).first
                else {
                    throw Refusal(found.isEmpty ? "the 200 response has no array of objects"
                        : "the 200 response has \(found.count) arrays of objects (\(found.map { "`\($0.name)`" }.joined(separator: ", "))) and none is named data, results or items",
                        notAList: found.isEmpty)
                }
                let path = JobProposal.pathText(chosen.name)
                records = .init(path: path, why: "the 200 response's `\(chosen.name)` is its array of objects")
                if found.count > 1 {
                    records.why = "the 200 response has \(JobProposal.count(found.count)) arrays of objects, "
                        + found.map { "`\($0.name)`" }.joined(separator: ", ") + "; chose `\(chosen.name)`"
                }
                item = chosen.item
            }
            // The id: `id`, else a required member named like one.
            let (properties, required) = try document.properties(item)
            let names = properties.map(\.name)
            let id: JobProposal.Choice
            if names.contains("id") {
                id = .init(path: "id", why: "the records' schema has `id`")
            } else if let best = idCandidates(names.filter(required.contains), table: table).first {
                id = .init(path: JobProposal.pathText(best), why: "the records' schema requires `\(best)`, named like an id")
            } else {
                throw Refusal("the records' schema has no `id` and requires no member named like an id (uuid, \(JobProposal.singular(table))_id, key, slug, …Id)")
            }
            var parameters: [String: OpenAPIDocument.Located] = [:]
            for list in [pathItem["parameters"], operation["parameters"]].compactMap({ $0 }) {
                for parameter in list.node.elements {
                    let resolved = try document.resolve(.init(node: parameter, file: list.file))
                    guard resolved.node["in"]?.text == "query", let name = resolved.node["name"]?.text else { continue }
                    parameters[name] = resolved
                }
            }
            var bodyNames: Set<String> = []
            for property in body?.properties ?? [] {
                parameters[property.name] = try document.types(property.schema).schema
                bodyNames.insert(property.name)
            }
            let answerObject = records.path == "." ? nil : answer
            var job = JobProposal(name: table, table: table, url: base + path, records: records, id: id, paging: .single,
                                  pagingWhy: "", firstPageCount: 0)
            var values: [String: String] = [:]
            try page(&job, document: document, parameters: parameters, body: bodyNames, values: &values, answer: answerObject)
            if post {
                job.method = "POST"
                if let body { job.body = try bodyText(document, body, values: values) }
            }
            return job
        } catch let failure as InitFailure {
            throw Refusal(failure)
        } catch let refusal as Refusal {
            throw refusal
        } catch {
            throw Refusal("\(error)")
        }
    }

    /// A POST's `body:` as a flow mapping, in its schema's order: the paging members the walk
    /// fills in, and each required member at its default or example.
    private static func bodyText(_ document: OpenAPIDocument,
                                 _ body: (properties: [(name: String, schema: OpenAPIDocument.Located)], required: Set<String>),
                                 values: [String: String]) throws -> String {
        var members: [String] = []
        for (name, schema) in body.properties {
            if let value = values[name] {
                members.append("\(JobProposal.scalar(name)): \(value)")
                continue
            }
            guard body.required.contains(name) else { continue }
            let (types, resolved) = try document.types(schema)
            guard let text = (resolved.node["default"] ?? resolved.node["example"] ?? resolved.node["examples"]?.elements.first)?.text else {
                throw Refusal("its request body requires `\(name)`, which has no default or example to send")
            }
            let literal = !types.contains("string") && (Int(text) != nil || Double(text) != nil || text == "true" || text == "false")
            members.append("\(JobProposal.scalar(name)): " + (literal ? text : types.contains("string") ? JSONText.quoted(text) : JobProposal.scalar(text)))
        }
        return members.isEmpty ? "{}" : "{ " + members.joined(separator: ", ") + " }"
    }

    /// The names ranked as `mirror init URL` ranks an id's, the likeliest first.
    private static func idCandidates(_ names: [String], table: String) -> [String] {
        let ranked: [(name: String, rank: Int)] = names.compactMap { name in
            guard let rank = JobProposal.idRank(name, table: table) else { return nil }
            return (name, rank)
        }
        return ranked.sorted { $0.rank != $1.rank ? $0.rank < $1.rank : $0.name < $1.name }.map(\.name)
    }

    /// The paging the query parameters and the answer's members show, the likeliest first: a
    /// next URL in the answer, a cursor, offsets, page numbers; else one request.
    /// A member of a POST's body (in `body`) gets its value in `values`, as YAML, not in the URL.
    private static func page(_ job: inout JobProposal, document: OpenAPIDocument, parameters: [String: OpenAPIDocument.Located],
                             body: Set<String>, values: inout [String: String], answer: OpenAPIDocument.Located?) throws {
        func place(_ name: String) -> String { body.contains(name) ? "body member `\(name)`" : "query parameter `\(name)`" }
        func put(_ name: String, _ value: String) {
            if body.contains(name) {
                values[name] = value.hasPrefix("{") ? JSONText.quoted(value) : value
            } else {
                job.url = JobProposal.adding(name, value, to: job.url)
            }
        }
        func member(_ names: [String]) throws -> String? {
            guard let answer else { return nil }
            for prefix in JobProposal.echoes {
                for name in names where try document.member(prefix + name, of: answer) != nil { return prefix + name }
            }
            return nil
        }
        func number(_ parameter: String, _ key: String) throws -> Int? {
            guard let schema = parameters[parameter]?["schema"] else { return parameters[parameter]?.node[key]?.int }
            return try document.types(schema).schema.node[key]?.int
        }
        let cursor = cursorParameters.first { parameters[$0] != nil }
        if let answer {
            for path in JobProposal.nextURLPaths where !path.contains("/") && !path.contains("[") {
                guard let schema = try document.member(path, of: answer) else { continue }
                let (types, resolved) = try document.types(schema)
                guard types.contains("string") else { continue }
                // A cursor parameter with a `next` that is not said to be a URL: `next` is the cursor.
                if cursor != nil, resolved.node["format"]?.text != "uri", !path.lowercased().contains("url") { continue }
                job.paging = .nextURL(path: path)
                job.pagingWhy = "the 200 response's `\(path)` is a string: the next page's URL"
                return
            }
        }
        let size = sizeParameters.first { parameters[$0] != nil }
        let sizeValue = try size.flatMap { try number($0, "default") ?? number($0, "maximum") }
        if let cursor {
            let hasMore = try member(JobProposal.hasMorePaths.filter { !$0.contains(".") })
            let path: String
            let why: String
            if cursor == "starting_after" {
                path = (job.records.path == "." ? "-1" : job.records.path + ".-1") + "." + job.id.path
                why = place("starting_after") + ": the last record's id goes back in it"
            } else if let next = try member(JobProposal.cursorPaths.map(\.path).filter { $0 != cursor }) {
                path = next
                why = place(cursor) + ": the 200 response's `\(next)` holds the next page's cursor"
            } else {
                throw Refusal(place(cursor) + " takes a cursor, but no member of the 200 response holds the next one")
            }
            put(cursor, "{cursor}")
            job.paging = .cursor(path: path, parameter: cursor, hasMore: hasMore)
            job.pagingWhy = why + (hasMore.map { " and `\($0)` says whether more follow" } ?? "")
            return
        }
        if parameters["offset"] != nil {
            let limit = size ?? "limit"
            let step = sizeValue ?? 100
            let from = try number("offset", "default") ?? 0
            let total = try member(totalMembers)
            let stop: JobProposal.Stop = total.map { .total($0) } ?? .short(step)
            put("offset", "{page}")
            put(limit, String(step))
            job.paging = .numbers(parameter: "offset", from: from, step: step, stop: stop)
            job.pagingWhy = (body.contains("offset") ? "body members" : "query parameters") + " `offset` and `\(limit)` (\(step), "
                + (sizeValue == nil ? "no default or maximum in the description" : "its \(try number(limit, "default") != nil ? "default" : "maximum")")
                + "): offsets that move by \(step) a page; " + JobProposal.stopWhy(stop, total: nil)
            return
        }
        if let page = pageParameters.first(where: { parameters[$0] != nil }) {
            let from = try number(page, "default") ?? number(page, "minimum") ?? 1
            let stop: JobProposal.Stop
            if let last = try member(["last_page", "lastPage"]) {
                stop = .lastPage(last)
            } else if let pages = try member(pagesMembers) {
                stop = .pages(pages)
            } else if let total = try member(totalMembers) {
                stop = .total(total)
            } else if let sizeValue {
                stop = .short(sizeValue)
            } else {
                stop = .empty
            }
            put(page, "{page}")
            if let size, let sizeValue { put(size, String(sizeValue)) }
            job.paging = .numbers(parameter: page, from: from, step: 1, stop: stop)
            job.pagingWhy = place(page) + " (from \(from))" + (size.map { name in sizeValue.map { " and `\(name)` (\($0))" } ?? "" } ?? "")
                + ": page numbers; " + JobProposal.stopWhy(stop, total: nil)
            return
        }
        job.pagingWhy = "no page, offset or cursor parameter and no next URL in the 200 response: one request"
    }

    /// What a job sends for its operation's security: an `auth:` definition, added to the
    /// file's once, the scopes its requirement names, and the schemes sent beside it as headers.
    struct Security {
        var name: String
        var scopes: [String]
        /// A flow mapping of `headers:`, when the requirement combines schemes.
        var headers: String?
        var why: String?
    }

    /// The security the operation's requirements (else the description's) ask for: the first
    /// requirement mirror writes, a scheme alone or schemes sent together (one as `auth:`, the
    /// others as fixed headers); nil when the operation needs none. A scheme mirror cannot
    /// write is a note; a combination it cannot send, when nothing else will do, a refusal.
    private static func security(_ document: OpenAPIDocument, operation: OpenAPIDocument.Located,
                                 global: OpenAPIDocument.Located?, schemes: OpenAPIDocument.Located?, label: String,
                                 into result: inout OpenAPIJobs) throws(Refusal) -> Security? {
        let requirements = (operation["security"] ?? global)?.node.elements ?? []
        if requirements.isEmpty || requirements.contains(where: { $0.members.isEmpty }) { return nil }
        func together(_ requirement: OpenAPIDocument.Node) -> String {
            let names = requirement.members.map { "'\($0.key)'" }
            return names.count == 1 ? names[0] : names.dropLast().joined(separator: ", ") + " and \(names.last!) together"
        }
        var unwritten: [String] = []
        var combinations: [String] = []
        var tried: [String] = []
        for (index, requirement) in requirements.enumerated() {
            var parts: [(scheme: String, scopes: [String], node: OpenAPIDocument.Node, lines: [String])] = []
            var failed: [String] = []
            for (scheme, scopes) in requirement.members {
                guard let definition = schemes?[scheme] else {
                    failed.append("'\(scheme)' (not in components.securitySchemes)")
                    continue
                }
                let resolved: OpenAPIDocument.Located
                do { resolved = try document.resolve(definition) } catch { throw Refusal(error) }
                switch authLines(resolved.node, variable: variable(scheme)) {
                case let .success(lines): parts.append((scheme, scopes.elements.compactMap(\.text), resolved.node, lines))
                case let .failure(refusal): failed.append("'\(scheme)' (\(refusal.reason))")
                }
            }
            let sends = "its security requirement sends \(together(requirement))"
            if requirement.members.count == 1, !failed.isEmpty {
                unwritten += failed
                tried += failed
                continue
            }
            if !failed.isEmpty {
                combinations.append(sends + ", and mirror writes no `auth:` for " + failed.joined(separator: ", "))
                tried.append(together(requirement))
                continue
            }
            var chosen = 0
            var headers: String?
            var why: String?
            if parts.count > 1 {
                let forms = parts.map { header($0.node, variable: variable($0.scheme)) }
                let bare = forms.indices.filter { forms[$0] == nil }
                guard bare.count <= 1 else {
                    combinations.append(sends + ", and a job carries one `auth:` and fixed `headers:`: only an apiKey in a header "
                        + "or an http bearer token is a fixed header, not "
                        + bare.map { "'\(parts[$0].scheme)' (\(kind(parts[$0].node)))" }.joined(separator: " or "))
                    tried.append(together(requirement))
                    continue
                }
                chosen = bare.first ?? 0
                let sent = forms.indices.filter { $0 != chosen }.compactMap { forms[$0] }
                var names = Set<String>()
                let clash = ([forms[chosen]?.name].compactMap { $0 } + sent.map(\.name)).first { !names.insert($0.lowercased()).inserted }
                if let clash {
                    combinations.append(sends + ", and two of them send the header '\(clash)'")
                    tried.append(together(requirement))
                    continue
                }
                headers = "{ " + sent.map { "\(JobProposal.scalar($0.name)): \(JobProposal.scalar($0.value))" }.joined(separator: ", ") + " }"
                why = sends + ": '\(parts[chosen].scheme)' as `auth:`, "
                    + parts.indices.filter { $0 != chosen }.map { "'\(parts[$0].scheme)'" }.joined(separator: ", ") + " in `headers:`"
            }
            let part = parts[chosen]
            if !result.auth.contains(where: { $0.name == authName(part.scheme) }) {
                let flowScopes = part.node["type"]?.text == "oauth2"
                    ? part.node["flows"]?["clientCredentials"]?["scopes"]?.members.map(\.key) ?? [] : nil
                result.auth.append(Auth(name: authName(part.scheme), lines: part.lines, flowScopes: flowScopes))
            }
            if requirements.count > 1 {
                let others = tried + requirements[(index + 1)...].map(together)
                why = (why.map { $0 + "; " } ?? "") + "the first of its security requirements mirror writes; the others: "
                    + others.joined(separator: ", ")
            }
            return Security(name: authName(part.scheme), scopes: part.scopes, headers: headers, why: why)
        }
        if !combinations.isEmpty { throw Refusal(combinations.joined(separator: "; ")) }
        let note = "\(label): no security scheme mirror writes: " + unwritten.joined(separator: ", ") + "; write its `auth:` by hand"
        if !result.notes.contains(note) { result.notes.append(note) }
        return nil
    }

    /// The fixed header a scheme is sent as beside another's `auth:`: an apiKey in a header,
    /// or an http bearer token; nil for any other.
    private static func header(_ scheme: OpenAPIDocument.Node, variable: String) -> (name: String, value: String)? {
        switch (scheme["type"]?.text, scheme["scheme"]?.text?.lowercased(), scheme["in"]?.text) {
        case ("apiKey", _, "header"): scheme["name"]?.text.map { ($0, "${\(variable)_KEY}") }
        case ("http", "bearer", _): ("Authorization", "Bearer ${\(variable)_TOKEN}")
        default: nil
        }
    }

    /// `http basic`, `apiKey in query`, `oauth2`: a scheme's kind, for a message.
    private static func kind(_ scheme: OpenAPIDocument.Node) -> String {
        let type = scheme["type"]?.text ?? "no type"
        if let word = scheme["scheme"]?.text, type == "http" { return "http \(word.lowercased())" }
        if let place = scheme["in"]?.text, type == "apiKey" { return "apiKey in \(place)" }
        return type
    }

    /// A scheme's `auth:` keys, secrets as `${VARIABLE_…}` from the environment.
    private static func authLines(_ scheme: OpenAPIDocument.Node, variable: String) -> Result<[String], Refusal> {
        let type = scheme["type"]?.text ?? ""
        switch (type, scheme["scheme"]?.text?.lowercased()) {
        case ("http", "bearer"):
            return .success(["type: bearer", "token: \"${\(variable)_TOKEN}\""])
        case ("http", "basic"):
            return .success(["type: basic", "username: \"${\(variable)_USERNAME}\"", "password: \"${\(variable)_PASSWORD}\""])
        case ("http", let other):
            return .failure(Refusal("http \(other ?? "without a scheme")"))
        case ("apiKey", _):
            guard let place = scheme["in"]?.text, ["header", "query", "cookie"].contains(place), let name = scheme["name"]?.text else {
                return .failure(Refusal("apiKey without `in` and `name`"))
            }
            return .success(["type: api_key", "\(place): \(JobProposal.scalar(name))", "value: \"${\(variable)_KEY}\""])
        case ("oauth2", _):
            guard let url = scheme["flows"]?["clientCredentials"]?["tokenUrl"]?.text else {
                return .failure(Refusal("oauth2 without a clientCredentials flow"))
            }
            return .success(["type: oauth2", "token_url: \(JobProposal.scalar(url))", "client_id: \"${\(variable)_CLIENT_ID}\"",
                             "client_secret: \"${\(variable)_CLIENT_SECRET}\""])
        default:
            return .failure(Refusal(type.isEmpty ? "no type" : type))
        }
    }

    /// An `auth:` name from a scheme's: letters, digits, `_` and `-`.
    static func authName(_ scheme: String) -> String {
        let name = String(scheme.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") ? $0 : "_" })
        return name.isEmpty ? "api" : name
    }

    /// `bearerAuth` → `BEARER_AUTH`: the start of the environment variables a scheme's secrets are read from.
    static func variable(_ scheme: String) -> String {
        var out = ""
        var previous: Character?
        for character in scheme {
            if character.isASCII && (character.isLetter || character.isNumber) {
                if character.isUppercase, let previous, previous.isLowercase || previous.isNumber { out.append("_") }
                out.append(Character(character.uppercased()))
            } else if !out.isEmpty, out.last != "_" {
                out.append("_")
            }
            previous = character
        }
        while out.hasSuffix("_") { out.removeLast() }
        return out.isEmpty ? "API" : out
    }

    /// The names of a path's `{parameters}`, whole segments or inside one (`/exports/{day}.json`).
    static func pathParameters(_ path: String) -> [String] {
        path.split(separator: "{").dropFirst().compactMap { part in part.firstIndex(of: "}").map { String(part[..<$0]) } }
    }

    /// `/v1/users/{id}/repos` → `users_repos`: the path's words, without parameters, versions or `api`.
    static func tableName(_ path: String) -> String {
        let words = path.split(separator: "/").filter { segment in
            !segment.hasPrefix("{") && segment.lowercased() != "api"
                && !(segment.count > 1 && segment.first == "v" && segment.dropFirst().allSatisfy(\.isNumber))
        }.map { segment in
            String(segment.split(separator: ".").first ?? segment)
                .map { $0.isASCII && ($0.isLetter || $0.isNumber) ? $0 : "_" }
        }.map { String($0) }
        let name = words.joined(separator: "_")
        return name.isEmpty ? "records" : name
    }

    private static func lastSegment(_ path: String) -> String {
        tableName(String(path.split(separator: "/").last(where: { !$0.hasPrefix("{") }) ?? ""))
    }

    /// The job file: the jobs, each key with why it was chosen, the `auth:` definitions they
    /// name, and a comment for each GET that is not a job.
    package func yaml() -> String {
        var lines = ["# written by `mirror init --openapi` from \(JobProposal.oneLine(source)); check it with `mirror check`, then `mirror run` it"]
        lines += notes.map { "# " + JobProposal.oneLine($0) }
        lines.append("version: 1")
        if !auth.isEmpty {
            lines.append("auth:")
            for definition in auth {
                lines.append("  \(JobProposal.scalar(definition.name)):")
                lines += definition.lines.map { "    " + $0 }
            }
        }
        lines.append("jobs:")
        for job in jobs { lines += job.proposal.jobLines(auth: job.auth.map(JobProposal.scalar), authWhy: job.authWhy, headers: job.headers) }
        lines += refused.map { "# " + JobProposal.oneLine($0) }
        return lines.joined(separator: "\n") + "\n"
    }
}
