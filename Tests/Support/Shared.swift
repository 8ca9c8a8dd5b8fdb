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
