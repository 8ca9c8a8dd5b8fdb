import Foundation
import Metrics
import MirrorFiles
import Prometheus

/// `run --metrics-file PATH`: the library counts through swift-metrics; only with this flag does
/// the run give those counts a backend, a Prometheus registry of its own, and write its text
/// exposition when the run ends, whole: to `PATH.tmp-<pid>` beside it, then renamed over PATH,
/// as node_exporter's textfile collector expects.
struct MetricsFile {
    let path: String
    let registry = PrometheusCollectorRegistry()

    /// The folder PATH is to go in, when it is not there: a usage error, said before any request.
    static func problem(_ path: String) -> String? {
        let folder = (path as NSString).deletingLastPathComponent
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: folder.isEmpty ? "." : folder, isDirectory: &isFolder), isFolder.boolValue {
            return nil
        }
        return "--metrics-file '\(path)': the folder '\(folder)' does not exist; create it or choose a file in another folder"
    }

    /// What makes the process's metrics land in this file's registry.
    var factory: any MetricsFactory {
        PrometheusMetricsFactory(registry: registry)
    }

    /// Makes the process's metrics land in each of `factories` (none: nowhere). Once per process.
    static func bootstrap(_ factories: [any MetricsFactory]) {
        switch factories.count {
        case 0: break
        case 1: MetricsSystem.bootstrap(factories[0])
        default: MetricsSystem.bootstrap(MultiplexMetricsHandler(factories: factories))
        }
    }

    /// Writes what was counted; a failure leaves PATH as it was and no temporary file.
    func write() throws(FileError) {
        let partial = path + ".tmp-\(ProcessInfo.processInfo.processIdentifier)"
        let descriptor = try FileSystem.createOrEmpty(partial)
        do throws(FileError) {
            try FileSystem.write(registry.emitToBuffer(), to: descriptor)
            try FileSystem.close(descriptor)
            try FileSystem.rename(partial, to: path)
        } catch {
            try? FileSystem.close(descriptor)
            try? FileSystem.remove(partial)
            throw error
        }
    }
}
