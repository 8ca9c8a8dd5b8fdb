import ArgumentParser
import Foundation
import MirrorCore
import MirrorHTTP

struct InitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Write a first job file from what an API answers.",
        discussion: """
            Requests URL, finds the array of records, their id and the paging dialect (Relay's \
            pageInfo, a next \
            URL in the body, a Link header, a cursor with has_more, page or offset numbers), \
            confirms the paging by walking two pages as `mirror run` would (page 2 must bring \
            new ids), and writes the job file, a comment above each key saying why it was \
            chosen. What was seen and not chosen is said on stderr and atop the file.

            With --graphql QUERY (the query's text, or @FILE to read it from a file) it POSTs \
            {"query": QUERY} to URL and reads a Relay connection in the answer (`pageInfo` with \
            `endCursor` and `hasNextPage` beside `nodes`, or `edges` of `{cursor, node}`): the job \
            has `method: POST` and a `body:` holding the query and, in the variable the query \
            passes as `after:` (`after: $after`), the cursor, left out of the first request. A \
            query with no such variable, or an answer of GraphQL errors and no data, writes nothing.

            With --openapi SPEC it reads an OpenAPI 3.0 or 3.1 description (JSON or YAML, \
            $refs into it and into files beside it followed; one on another host is never \
            fetched) instead, and writes one job for each GET, or POST search, whose 200 answer \
            is an array of objects or an object holding one: the \
            paging from its query parameters and answer's members, the id from its records' \
            schema, `auth:` from its security schemes (${VAR} placeholders for the secrets), \
            and a child job for a list under another list's id. Each operation it cannot walk \
            is a comment in the file saying why. --base-url replaces the description's servers[0].url.

            --auth FILE names a YAML file holding an `auth:` block (README's kinds); it is \
            copied into the job with its ${VAR} placeholders, which are expanded from the \
            environment for the requests init makes.

            Exit status: 0 written; 1 the API could not be asked or the file not written; 2 \
            usage or config error, the file exists (without --force), the GraphQL query passes no \
            `after:` variable or is answered with errors and no data, the description is not \
            OpenAPI 3.x, has no list operation or needs a $ref on another host, or the answers \
            leave the job undecided (no array of objects, no unique id, page 2 repeating page 1): \
            nothing written.
            """)

    @Argument(help: "The URL of the API's first page.") var url: String?
    @Option(help: ArgumentHelp("An OpenAPI 3.x description (JSON or YAML) to write the jobs from.", valueName: "SPEC")) var openapi: String?
    @Option(help: ArgumentHelp("A GraphQL query to POST to URL, or @FILE to read it from a file; its `after:` variable carries the cursor.",
                               valueName: "QUERY")) var graphql: String?
    @Option(help: ArgumentHelp("The API's URL, in place of the description's servers[0].url (with --openapi).", valueName: "URL"))
    var baseURL: String?
    @Option(help: ArgumentHelp("Where to write the job file (default: jobs/NAME.yaml).", valueName: "FILE")) var out: String?
    @Option(help: ArgumentHelp("A YAML file holding an `auth:` block.", valueName: "FILE")) var auth: String?
    @Option(help: "The job's name (default: the URL's last path segment).") var name: String?
    @Flag(help: "Overwrite an existing job file.") var force = false
    @OptionGroup var log: LogOptions

    func validate() throws {
        if (url == nil) == (openapi == nil) {
            throw ValidationError(url == nil ? "give the URL of the API's first page, or --openapi SPEC" : "give a URL or --openapi SPEC, not both")
        }
        if openapi != nil, name != nil || auth != nil {
            throw ValidationError("--name and --auth are for a URL: with --openapi, names come from the paths and auth from the security schemes")
        }
        if baseURL != nil, openapi == nil { throw ValidationError("--base-url goes with --openapi") }
        if graphql != nil, url == nil { throw ValidationError("--graphql goes with a URL, not with --openapi") }
        if let name, name.isEmpty || !name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }) {
            throw ValidationError("--name must be letters, digits, '_' or '-', not '\(name)'")
        }
    }

    func run() async throws {
        let logger = LogSetup.bootstrap(quiet: true, verbose: false, format: log.format)
        do {
            if let openapi {
                let written = try OpenAPIJobs.write(path: openapi, baseURL: baseURL, out: out, force: force)
                for note in written.jobs.notes { printError(note) }
                let names = written.jobs.jobs.map(\.proposal.name)
                try printOut("wrote \(written.path) (\(names.count) job\(names.count == 1 ? "" : "s"): \(names.joined(separator: ", ")))\n"
                    + "next: mirror check \(written.path), then mirror run \(written.path)")
                return
            }
            guard let url else { return }
            let query = try graphql.map(GraphQLQuery.reading)
            let written = try await JobInitializer(client: HTTPClient(), logger: logger)
                .write(url: url, out: out, name: name, authFile: auth, graphQL: query, force: force)
            for note in written.proposal.notes { printError(note) }
            try printOut("wrote \(written.path) (job '\(written.proposal.name)', table '\(written.proposal.table)')\n"
                + "next: mirror run \(written.path)")
        } catch let failure as InitFailure {
            printError("error: \(failure)")
            throw ExitCode(failure.status)
        }
    }
}
