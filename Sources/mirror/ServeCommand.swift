import ArgumentParser
import Foundation
import Logging
import MirrorCore
import MirrorExport
import MirrorJobFile
import MirrorModel
import MirrorReplica
import Metrics
import MirrorServe
import Prometheus

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Answer HTTP requests from the output folder, read-only and offline.",
        discussion: """
            Answers the API's own URLs: a GET of a page a run stored (a POST with the same \
            body), with the same path and query, gets the page as the API served it, its \
            records as stored now and its next URLs pointing here; secrets are not needed \
            and never sent; ETag and If-None-Match give 304. A page is kept as assembled, \
            up to --page-cache in all (its body in a scratch file of $TMPDIR, which the \
            kernel caches), and sent again from there until a commit changes what it is \
            made of. Serves a status page at / and \
            the read API under /_mirror/: tables, tables/<table> (records, with \
            account, since_id, max_id, limit, offset, order as export takes them), \
            changes/<table>?since=N (the change feed), files/<path> (downloaded files, with \
            ETag and Range) and status (as status --json). Databases are opened read-only \
            for each request and no lock is taken: a run may write meanwhile. A connection \
            that sends nothing for --idle-timeout is closed, and so is one whose request head \
            is not whole --header-timeout after its first byte, or that takes none of its \
            response for --send-timeout. SIGTERM, SIGINT or SIGHUP stop it once the \
            responses in flight are sent, or --stop-grace later, cutting them; a second \
            signal stops it at once. With --tls-cert and --tls-key it answers HTTPS, and \
            SIGHUP reads both files again instead of stopping it: new connections get the \
            new certificate, open ones keep theirs. With --device-tokens, every request \
            needs a token of that file (Authorization: Bearer TOKEN; 401 without one) and \
            gets only the accounts and tables its token names (403 otherwise, whether they \
            exist or not); SIGHUP reads the file again. 'mirror device-token add' makes a \
            token. An address beyond loopback (--bind 0.0.0.0) is \
            served only with --open (every record to every client) or --device-tokens. \
            With --metrics, GET /metrics answers the server's counts in Prometheus' text \
            format (requests by route and status class, their durations, bytes sent), \
            under the same Host check and device tokens as the status page.

            Exit status: 0 stopped by a signal; 128 + N stopped at once by a second signal N \
            (143 SIGTERM, 130 SIGINT, 129 SIGHUP); 1 the server failed; 2 usage or config \
            error, or the address cannot be listened on (the port is taken).

            \(jobFileReference)
            """)

    @Argument(help: "Job files (optional): their output folder, and their jobs in status.") var files: [String] = []
    @Option(help: "Output folder (default: the job files' 'output:', else ./cache).") var output: String?
    @OptionGroup var log: LogOptions
    @Option(help: "Address to listen on; 0.0.0.0 for every interface (with --open).") var bind = "127.0.0.1"
    @Flag(help: "Serve every record to every client that can reach --bind, when it is beyond loopback.")
    var open = false
    @Option(help: "Port to listen on (0: any free one).") var port = 8080
    @Option(name: .customLong("device-tokens"),
            help: "Answer only requests with a device token of this file (Authorization: Bearer), each within its accounts and tables; read again on SIGHUP (see 'mirror device-token add').")
    var deviceTokens: String?
    @Option(name: .customLong("tls-cert"), help: "Answer HTTPS with this PEM certificate (chain), read again on SIGHUP (with --tls-key).")
    var tlsCert: String?
    @Option(name: .customLong("tls-key"), help: "The PEM private key of --tls-cert, read again on SIGHUP.")
    var tlsKey: String?
    @Option(name: .customLong("idle-timeout"), help: "Close a connection that sends nothing for this long.")
    var idleTimeout = "60s"
    @Option(name: .customLong("header-timeout"), help: "Close a connection whose request head is not whole this long after its first byte.")
    var headerTimeout = "10s"
    @Option(name: .customLong("send-timeout"), help: "Drop a client that takes none of its response for this long.")
    var sendTimeout = "30s"
    @Option(name: .customLong("stop-grace"), help: "On a signal, wait this long for the responses in flight, then cut them.")
    var stopGrace = "10s"
    @Flag(help: "Answer GET /metrics with the server's counts in Prometheus' text format.")
    var metrics = false
    @Option(name: .customLong("page-cache"),
            help: "Keep up to this much of the replayed pages as assembled, to send again while their records are unchanged (0: none).")
    var pageCache = ByteSize.text(MirrorServer.defaultPageCache).replacingOccurrences(of: " ", with: "")

    /// The most `--page-cache` may be.
    static let largestPageCache = 1 << 40

    /// A time limit of 1ms to a day.
    static func limit(_ text: String) -> Duration? {
        guard let seconds = JobFileLoader.duration(text), seconds >= 0.001, seconds <= 86_400 else { return nil }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// `--metrics`: the library counts through swift-metrics; the process's metrics land in a
    /// Prometheus registry of its own, with the duration buckets serve asks for, and
    /// `/metrics` answers with its text exposition.
    static func servedMetrics() -> ServeMetrics {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets[ServeMetrics.durationLabel] = ServeMetrics.durationBuckets
        MetricsSystem.bootstrap(factory)
        return ServeMetrics { registry.emitToBuffer() }
    }

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535, not \(port)") }
        for (name, value) in [("idle-timeout", idleTimeout), ("header-timeout", headerTimeout),
                              ("send-timeout", sendTimeout), ("stop-grace", stopGrace)] where Self.limit(value) == nil {
            throw ValidationError("--\(name) must be a duration from 1ms to 24h such as 500ms, 10s or 2m, not '\(value)'")
        }
        guard (tlsCert == nil) == (tlsKey == nil) else {
            throw ValidationError("--tls-cert and --tls-key go together: give both (the certificate and its key) or neither")
        }
        guard open || deviceTokens != nil || MirrorServer.isLoopback(bind) else {
            throw ValidationError("""
                --bind \(bind) serves beyond this machine, to anyone who can reach it: give --device-tokens FILE \
                to serve each device only its own accounts and tables, or --open to serve every record to every client
                """)
        }
        guard let bytes = JobFileLoader.byteSize(pageCache), bytes <= Self.largestPageCache else {
            throw ValidationError("--page-cache must be a size from 0 to 1024GB such as 0, 64MB or 1GB, not '\(pageCache)'")
        }
    }

    func run() async throws {
        let loaded = try loadJobFiles(files)
        var runOptions = Runner.Options()
        runOptions.output = output
        let folders = Set(loaded.map { Runner.outputFolder(for: $0, options: runOptions) })
        guard folders.count <= 1 else {
            throw UsageError("the job files name \(folders.count) output folders; serve one at a time (--output)")
        }
        // A replica `mirror pull` keeps is answered from the generation it holds, followed as pulls replace it.
        var options = MirrorServer.Options(output: Replica.answeredFolder(output ?? folders.first ?? "cache"))
        options.jobFiles = loaded
        options.bind = bind
        options.port = port
        options.idleTimeout = Self.limit(idleTimeout) ?? options.idleTimeout
        options.headerTimeout = Self.limit(headerTimeout) ?? options.headerTimeout
        options.sendTimeout = Self.limit(sendTimeout) ?? options.sendTimeout
        options.stopGrace = Self.limit(stopGrace) ?? options.stopGrace
        options.pageCache = JobFileLoader.byteSize(pageCache) ?? options.pageCache
        options.deviceTokens = deviceTokens
        if let tlsCert, let tlsKey { options.tls = MirrorServer.TLSFiles(certificate: tlsCert, key: tlsKey) }
        if metrics { options.metrics = Self.servedMetrics() }
        let format = log.format
        let logger = LogSetup.bootstrap(quiet: false, verbose: false, format: format)
        let address = bind
        let folder = options.output
        let scheme = options.tls == nil ? "http" : "https"
        // With files to read again, SIGHUP reads them, and stops nothing.
        let reloads = options.reloads ? await MirrorServer.hangUps() : nil
        let stop: MirrorServer.Stop
        do {
            stop = try await MirrorServer(options: options).run(
                logger: logger, signals: reloads == nil ? .process : .interruptOrTerminate, reloads: reloads
            ) { port in
                let url = "\(scheme)://\(address):\(port)/_mirror/tables"
                // With json logs, where it listens is one more event; else the line a person reads.
                if format == .json {
                    logger.info("serving", metadata: ["output": "\(folder)", "url": "\(url)"])
                } else {
                    printError("serving '\(folder)' on \(url)")
                }
            }
        } catch let failure as MirrorServer.ListenFailure {
            printError("error: \(failure)")
            throw ExitCode(2)
        }
        if case let .forced(signal) = stop { throw Interrupted(signal: signal) }
    }
}
