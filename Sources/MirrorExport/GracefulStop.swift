import Foundation
import Logging
import MirrorHTTP
package import MirrorModel
import ServiceLifecycle
import Synchronization
import UnixSignals

/// The signals that ask a run, a verify, a snapshot or a server to stop before its end.
package struct StopSignals: Sendable {
    enum Signals: Sendable {
        case none
        case process(hangUp: Bool)
        case stream(AsyncStream<Int32>)
    }

    let signals: Signals

    /// None: only a deadline stops the work, if one is set. (Cancelling its task is no stop
    /// but an abort.)
    package static let none = StopSignals(signals: .none)

    /// SIGINT (Ctrl-C), SIGTERM (systemd's stop, `kill`) and SIGHUP (a closed terminal).
    package static let process = StopSignals(signals: .process(hangUp: true))

    /// SIGINT and SIGTERM only: SIGHUP is left to the caller (serve reads its certificate
    /// and device tokens again on it).
    package static let interruptOrTerminate = StopSignals(signals: .process(hangUp: false))

    /// The signals `stream` yields, as if they came to the process: how a test sends one.
    package static func stream(_ stream: AsyncStream<Int32>) -> StopSignals {
        StopSignals(signals: .stream(stream))
    }
}

/// Why work stopped before its end.
package enum StopCause: Sendable, Equatable {
    /// A signal: the process exits with 128 + its number (130 for SIGINT, 143 for SIGTERM).
    case signal(Int32)
    /// The deadline (`--max-time`).
    case deadline
    /// The shard's lease in the remote state store was lost to another worker (`--state`).
    case leaseLost

    package var signal: Int32? {
        if case let .signal(number) = self { number } else { nil }
    }
}

/// How `run`, `verify`, `snapshot` and `serve` stop: the work is the one
/// service of a `ServiceGroup`, and a first signal or the deadline (`--max-time`, on `clock`)
/// triggers the group's graceful shutdown, as does a cause `requests` yields. The work decides what it cuts: what it fetches or
/// copies runs in `cancelWhenGracefulShutdown` and is cancelled; what it records after that
/// (a run's walk state, its `_mirror_runs` row, the downloads it finished) runs to its end,
/// so the next run resumes exactly. A second signal calls `forced` (by default the process
/// exits at once with 128 + its number). Cancelling the task that waits here cancels the
/// work outright, bookkeeping included.
package enum GracefulStop {
    package static func run<T: Sendable>(
        _ signals: StopSignals, deadline: RunClock.Instant? = nil, clock: RunClock = .continuous,
        requests: AsyncStream<StopCause>? = nil,
        forced: @escaping @Sendable (Int32) -> Void = { _exit(128 + $0) },
        _ work: @escaping @Sendable () async throws -> T
    ) async throws -> (value: T, stop: StopCause?) {
        let outcome = Mutex<Result<T, any Error>?>(nil)
        let cause = Mutex<StopCause?>(nil)
        let service = ClosureService {
            let result: Result<T, any Error>
            do { result = .success(try await work()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
        }
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [], cancellationSignals: [], logger: Self.quiet))
        /// The first request stops the work, unless it has already ended; a signal after a
        /// signal forces. (A signal after the deadline is the one the exit status names.)
        let request: @Sendable (StopCause) async -> Void = { stop in
            guard outcome.withLock({ $0 == nil }) else { return }
            let previous = cause.withLock { cause in
                defer { if cause?.signal == nil { cause = stop } }
                return cause
            }
            if previous == nil {
                await group.triggerGracefulShutdown()
            } else if previous?.signal != nil, let signal = stop.signal {
                forced(signal)
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { listeners in
            switch signals.signals {
            case .none:
                break
            case let .process(hangUp):
                let trapped = await UnixSignalsSequence(trapping: hangUp ? [.sigint, .sigterm, .sighup] : [.sigint, .sigterm])
                listeners.addTask {
                    for await signal in trapped { await request(.signal(signal.rawValue)) }
                }
            case let .stream(sent):
                listeners.addTask {
                    for await signal in sent { await request(.signal(signal)) }
                }
            }
            if let requests {
                listeners.addTask {
                    for await cause in requests { await request(cause) }
                }
            }
            if let deadline {
                listeners.addTask {
                    guard (try? await clock.sleep(until: deadline)) != nil else { return }
                    await request(.deadline)
                }
            }
            defer { listeners.cancelAll() }
            try await group.run()
        }
        guard let result = outcome.withLock({ $0 }) else { throw CancellationError() }
        return (try result.get(), cause.withLock { $0 })
    }

    /// The group's own lifecycle (a service started, finished) is no news to a user.
    private static let quiet = Logger(label: "mirror", factory: { _ in SwiftLogNoOpLogHandler() })
}
