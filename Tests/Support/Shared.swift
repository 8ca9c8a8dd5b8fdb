import Foundation
import Synchronization

/// A counter tests flip between rounds of a fixture.
package final class SharedCounter: Sendable {
    private let storage = Mutex(0)
    package init() {}
    package var value: Int { storage.withLock { $0 } }
    package func increment() { storage.withLock { $0 += 1 } }
}

/// A string a test sets once its server is up.
package final class SharedText: Sendable {
    private let storage = Mutex("")
    package init() {}
    package var value: String {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}

/// What `work` returns, done on a thread of its own because it blocks: a child process
/// waited for, a socket polled. The tasks' threads are as many as the cores, and the tests
/// running meanwhile need them: their servers answer and their clients read there. One
/// blocked for long starved every other test's requests until they timed out. Not for
/// Foundation's `Process`: one run from such a thread was left a zombie, its exit never seen,
/// and `waitUntilExit` waited forever.
package func onThreadOfItsOwn<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
