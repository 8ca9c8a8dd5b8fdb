import MirrorModel
import Testing

@Suite("the run's clock", .timeLimit(.minutes(6)))
struct RunClockTests {
    let clock = RunClock.continuous

    @Test("a sleep returns once its instant has passed, and at once for one past")
    func sleepsUntil() async throws {
        let start = clock.now
        try await clock.sleep(until: start + .milliseconds(50))
        #expect(clock.now - start >= .milliseconds(50))
        let past = clock.now
        try await clock.sleep(until: past - .seconds(1))
        try await clock.sleep(until: past)
    }

    @Test("a sleep of an hour, cancelled, throws CancellationError at once; one begun in a cancelled task never waits")
    func cancelled() async throws {
        let start = clock.now
        let sleeps = (0 ..< 200).map { _ in
            Task { [clock] in try await clock.sleep(until: clock.now + .seconds(3600)) }
        }
        for sleep in sleeps { sleep.cancel() }
        for sleep in sleeps {
            await #expect(throws: CancellationError.self) { try await sleep.value }
        }
        let begunCancelled = Task { [clock] in
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(until: clock.now + .seconds(3600))
        }
        await #expect(throws: CancellationError.self) { try await begunCancelled.value }
        // The test's time limit is minutes: none of them waited for its hour.
        #expect(clock.now - start < .seconds(60))
    }
}
