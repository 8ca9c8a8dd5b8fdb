import InMemoryTracing
import Instrumentation
import Metrics
import MetricsTestKit
import Tracing

/// The process's metrics and spans, recorded from the first `Harness` on for every test of
/// the process, so that the secret scans (`Harness.writtenBytes`) read each metric's labels
/// and each span's name, attributes and status beside the files and logs. (The executable
/// exports them to a Prometheus file and over OTLP; here they are kept in memory.)
enum Telemetry {
    static let metrics = TestMetrics()
    static let tracer = InMemoryTracer()

    private static let bootstrapped: Void = {
        MetricsSystem.bootstrap(metrics)
        InstrumentationSystem.bootstrap(tracer)
    }()

    static func record() {
        _ = bootstrapped
    }

    /// Every metric and span recorded so far, one a line.
    static var said: String {
        var lines: [String] = []
        func line(_ label: String, _ dimensions: [(String, String)]) {
            lines.append(label + " " + dimensions.map { "\($0.0)=\($0.1)" }.joined(separator: " "))
        }
        for counter in metrics.counters { line(counter.label, counter.dimensions) }
        for timer in metrics.timers { line(timer.label, timer.dimensions) }
        for recorder in metrics.recorders { line(recorder.label, recorder.dimensions) }
        for meter in metrics.meters { line(meter.label, meter.dimensions) }
        for span in tracer.finishedSpans {
            var text = span.operationName
            span.attributes.forEach { key, value in text += " \(key)=\(value)" }
            if let status = span.status { text += " status=\(status.code) \(status.message ?? "")" }
            lines.append(text)
        }
        return lines.joined(separator: "\n")
    }
}
