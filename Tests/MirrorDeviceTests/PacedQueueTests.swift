import Foundation
@testable import MirrorDevice
import Synchronization
import Testing

@Suite("the delegate queue of a sync's URLSession", .timeLimit(.minutes(6)))
struct PacedQueueTests {
    /// Operations added by one thread, as URLSession's own thread adds each piece of a body.
    private final class Counts: Sendable {
        let added = Atomic<Int>(0)
        let ended = Atomic<Int>(0)
        let mostWaiting = Atomic<Int>(0)
        let order = Mutex<[Int]>([])
    }

    @Test("whoever adds an operation waits while `room` wait already; all run, one at a time, in order")
    func addingWaitsForRoom() async throws {
        let queue = PacedQueue(room: 8)
        let counts = Counts()
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            for index in 0..<300 {
                queue.addOperation {
                    usleep(200)
                    counts.order.withLock { $0.append(index) }
                    counts.ended.add(1, ordering: .sequentiallyConsistent)
                }
                let added = counts.added.add(1, ordering: .sequentiallyConsistent).newValue
                let waiting = added - counts.ended.load(ordering: .sequentiallyConsistent)
                counts.mostWaiting.max(waiting, ordering: .sequentiallyConsistent)
            }
            done.signal()
        }
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                done.wait()
                queue.waitUntilAllOperationsAreFinished()
                continuation.resume()
            }
        }
        #expect(counts.ended.load(ordering: .sequentiallyConsistent) == 300)
        #expect(counts.order.withLock { $0 } == Array(0..<300))
        let most = counts.mostWaiting.load(ordering: .sequentiallyConsistent)
        #expect(most >= 1 && most <= 8, "at most 8 operations waited, not \(most)")
    }

    @Test("an operation that adds one from the queue itself does not wait, even when the queue is full")
    func addingFromTheQueue() async throws {
        let queue = PacedQueue(room: 1)
        let order = Mutex<[String]>([])
        await withCheckedContinuation { continuation in
            queue.addOperation {
                order.withLock { $0.append("first") }
                queue.addOperation {
                    order.withLock { $0.append("added by the first") }
                    continuation.resume()
                }
            }
        }
        #expect(order.withLock { $0 } == ["first", "added by the first"])
    }
}
