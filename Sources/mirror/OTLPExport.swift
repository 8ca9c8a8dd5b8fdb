import Foundation
import Instrumentation
import Logging
import Metrics
import MirrorHTTP
import OTel
import ServiceLifecycle

/// `run --otlp-endpoint URL`, or the standard `OTEL_EXPORTER_OTLP_ENDPOINT`: the run's spans and
/// metrics go to an OpenTelemetry collector over OTLP/HTTP (protobuf), through swift-otel. The
/// library only starts spans and counts; this gives them their exporters. The URL is a base,
/// as the variable's is (`/v1/traces` and `/v1/metrics` are added to it), and the flag wins over
/// the variable; swift-otel reads the other OTEL_* variables as the specification says
/// (`OTEL_EXPORTER_OTLP_HEADERS`, `…_TIMEOUT`, `…_TRACES_ENDPOINT`, `OTEL_SERVICE_NAME`, …).
/// `OTEL_SDK_DISABLED=true` turns the export off.
struct OTLPExport {
    let metrics: any MetricsFactory
    private let tracer: any Instrument
    /// Metrics' and spans' apart, so that their last exports, and the waits of a collector
    /// that does not answer, run at once.
    private let services: [ServiceGroup]

    /// Where the run exports: the flag's URL, else the environment's, else nowhere.
    static func endpoint(flag: String?, environment: [String: String]) -> String? {
        if environment["OTEL_SDK_DISABLED"]?.lowercased() == "true" { return nil }
        return flag ?? environment["OTEL_EXPORTER_OTLP_ENDPOINT"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// An endpoint that is not an http or https URL: a usage error, said before any request.
    static func problem(_ endpoint: String) -> String? {
        HTTPClient.isHTTP(endpoint) ? nil
            : "--otlp-endpoint must be the http or https URL of an OTLP/HTTP receiver, such as http://127.0.0.1:4318, not '\(endpoint)'"
    }

    /// The exporters, not yet running. What goes wrong exporting is said through `logger`,
    /// as warnings (`OTEL_LOG_LEVEL` sets another level).
    init(endpoint: String, logger: Logger) throws {
        // swift-otel reads the endpoint from the environment after any configuration; the
        // flag is set there so that it wins, and the specification's rules for the
        // variable (the base of each signal's path) hold for it.
        setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint, 1)
        var configuration = OTel.Configuration.default
        configuration.serviceName = "mirror"
        configuration.diagnosticLogger = .custom(logger)
        configuration.diagnosticLogLevel = .warning
        configuration.logs.enabled = false
        let metrics = try OTel.makeMetricsBackend(configuration: configuration)
        let tracing = try OTel.makeTracingBackend(configuration: configuration)
        self.metrics = metrics.factory
        tracer = tracing.factory
        services = [ServiceGroup(services: [metrics.service], logger: logger),
                    ServiceGroup(services: [tracing.service], logger: logger)]
    }

    /// Makes the process's spans go to this exporter. Once per process.
    func bootstrapTracing() {
        InstrumentationSystem.bootstrap(tracer)
    }

    /// Runs `body` while the exporters run, then stops them, which sends what they still hold:
    /// the last spans and the metrics' final values reach the collector before this returns.
    func running<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for service in services {
                group.addTask { try await service.run() }
            }
            let result: Result<T, any Error>
            do {
                result = .success(try await body())
            } catch {
                result = .failure(error)
            }
            for service in services {
                await service.triggerGracefulShutdown()
            }
            // An export that failed was said by the exporter; it never fails the run.
            try? await group.waitForAll()
            return try result.get()
        }
    }
}
