import Foundation
import MirrorModel
import Synchronization
import UnixSignals

/// A signal stopped the run; the process exits with 128 + its number (130 for SIGINT,
/// 143 for SIGTERM, 129 for SIGHUP), as shells report it.
struct Interrupted: Error {
    let signal: Int32
    var exitStatus: Int32 { 128 + signal }
}

/// Runs work that SIGINT (Ctrl-C), SIGTERM (systemd's stop, `kill`) or SIGHUP (a closed
/// terminal) stops gracefully: the first signal cancels it, and it ends as it does when
/// cancelled (the run records itself and releases its lock); a second exits at once.
enum GracefulStop {
    private final class Received: Sendable {
        let signal = Atomic<Int32>(0)
    }

    /// `work`'s value, and the signal that cancelled it, if one did.
    static func run<T: Sendable>(
        _ work: @escaping @Sendable () async throws -> T
    ) async throws -> (value: T, signal: Int32?) {
        let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm, .sighup)
        let received = Received()
        let task = Task { try await work() }
        let listener = Task {
            for await signal in signals {
                let (first, _) = received.signal.compareExchange(expected: 0, desired: signal.rawValue, ordering: .relaxed)
                if first {
                    task.cancel()
                } else {
                    _exit(128 + received.signal.load(ordering: .relaxed))
                }
            }
        }
        defer { listener.cancel() }
        let value = try await task.value
        let signal = received.signal.load(ordering: .relaxed)
        return (value, signal == 0 ? nil : signal)
    }
}
