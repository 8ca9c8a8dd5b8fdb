import ArgumentParser
import Foundation
import Logging
import MirrorCore

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Answer HTTP requests from the output folder, read-only and offline.",
        discussion: """
            Answers the API's own URLs: a GET of a page a run stored (a POST with the same \
            body), with the same path and query, gets the page as the API served it, its \
            records as stored now and its next URLs pointing here; secrets are not needed \
            and never sent; ETag and If-None-Match give 304. Serves a status page at / and \
            the read API under /_mirror/: tables, tables/<table> (records, with \
            account, since_id, max_id, limit, offset, order as export takes them), \
            changes/<table>?since=N (the change feed), files/<path> (downloaded files, with \
            ETag and Range) and status (as status --json). Databases are opened read-only \
            for each request and no lock is taken: a run may write meanwhile. SIGTERM, SIGINT \
            or SIGHUP stop it once the requests in flight are answered.

            Exit status: 0 stopped by a signal; 1 the server failed; 2 usage or config error, \
            or the address cannot be listened on (the port is taken).

            \(jobFileReference)
            """)

    @Argument(help: "Job files (optional): their output folder, and their jobs in status.") var files: [String] = []
    @Option(help: "Output folder (default: the job files' 'output:', else ./cache).") var output: String?
    @Option(help: "Address to listen on; 0.0.0.0 for every interface.") var bind = "127.0.0.1"
    @Option(help: "Port to listen on (0: any free one).") var port = 8080

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535, not \(port)") }
    }

    func run() async throws {
        let loaded = try loadJobFiles(files)
        var runOptions = Runner.Options()
        runOptions.output = output
        let folders = Set(loaded.map { Runner.outputFolder(for: $0, options: runOptions) })
        guard folders.count <= 1 else {
            throw UsageError("the job files name \(folders.count) output folders; serve one at a time (--output)")
        }
        var options = MirrorServer.Options(output: output ?? folders.first ?? "cache")
        options.jobFiles = loaded
        options.bind = bind
        options.port = port
        let logger = LogSetup.bootstrap(quiet: false, verbose: false)
        let address = bind
        let folder = options.output
        do {
            try await MirrorServer(options: options).run(logger: logger) { port in
                printError("serving '\(folder)' on http://\(address):\(port)/_mirror/tables")
            }
        } catch let failure as MirrorServer.ListenFailure {
            printError("error: \(failure)")
            throw ExitCode(2)
        }
    }
}
