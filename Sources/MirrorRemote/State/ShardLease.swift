import Foundation
import Metrics
import MirrorFiles
import MirrorHTTP
package import MirrorModel

/// Another worker holds the shard's lease (exit status 3, as for the output folder's lock).
package struct LeaseHeldError: Error, Sendable, CustomStringConvertible {
    package let location: String
    package let key: String
    package let holder: String
    package let expiresAt: String

    package var description: String {
        "another mirror run (\(holder)) holds the lease \(key) in \(location) until \(expiresAt)"
    }
}

/// A shard's lease in a remote state store: one object, `shards/<I>-of-<N>/lease.json`,
/// saying who holds the shard and until when. It is taken with a write only-if-absent, or,
/// once the holder's time has passed (a worker that died without giving it back), with a
/// write only-if-unchanged over the lapsed one; it is renewed the same way, and given back
/// by deleting it only-if-unchanged. Two workers can never both hold it: of two writes over
/// the same object, only one finds it unchanged; and a worker whose lease lapsed and was
/// taken over cannot remove the new holder's, even while its release is on the way. Expiry is read on the clock of the worker that wants the
/// lease, so the workers' clocks must agree to within a small part of the lease time.
package actor ShardLease {
    struct Content: Codable {
        var holder: String
        var token: String
        var takenAt: String
        var expiresAt: String

        enum CodingKeys: String, CodingKey {
            case holder, token
            case takenAt = "taken_at"
            case expiresAt = "expires_at"
        }
    }

    package nonisolated let key: String
    package nonisolated let time: Duration
    private let store: any ObjectStore
    private let holder: String
    private let token = Hex.string((0..<8).map { _ in UInt8.random(in: 0...255) })
    private var tag: String?
    private var takenAt = ""
    /// The clock renewals wait on; its time of day is what expiries are written and read on.
    private let clock: RunClock
    /// Leases taken over once lapsed, counted through swift-metrics.
    private let takeovers = Counter(label: "mirror_lease_takeovers_total")

    package init(store: any ObjectStore, key: String, time: Duration, clock: RunClock = .continuous) {
        self.store = store
        self.key = key
        self.time = time
        self.clock = clock
        holder = "\(ProcessInfo.processInfo.hostName) pid \(FileSystem.processID)"
    }

    private func now() -> Date { clock.date }

    private var seconds: Double { Double(time.components.seconds) + Double(time.components.attoseconds) / 1e18 }

    private func content(now: Date) throws(StateError) -> [UInt8] {
        let content = Content(holder: holder, token: token, takenAt: takenAt,
                              expiresAt: Timestamp.string(now.addingTimeInterval(seconds)))
        do {
            return Array(try JSONEncoder().encode(content))
        } catch {
            throw StateError("cannot write the lease: \(error)")
        }
    }

    /// Takes the lease, or throws `LeaseHeldError` when a live one is another's.
    package func take() async throws {
        for _ in 0..<3 {
            let start = now()
            takenAt = Timestamp.string(start)
            if try await write(.ifNoneMatch, now: start) { return }
            guard let (bytes, current) = try await store.read(key) else { continue }
            let held = try? JSONDecoder().decode(Content.self, from: Data(bytes))
            // One of this process's own earlier answers, lost on the way: it is ours.
            if held?.token == token {
                tag = current
                return
            }
            if let held, let expiry = Timestamp.date(held.expiresAt), expiry > now() {
                throw LeaseHeldError(location: store.location, key: key, holder: held.holder, expiresAt: held.expiresAt)
            }
            // Lapsed, or not a lease at all: taken over, if no one else takes it first.
            if try await write(.ifMatch(current), now: now()) {
                takeovers.increment()
                return
            }
        }
        let held = try? await store.read(key).flatMap { try? JSONDecoder().decode(Content.self, from: Data($0.bytes)) }
        throw LeaseHeldError(location: store.location, key: key, holder: held?.holder ?? "another worker",
                             expiresAt: held?.expiresAt ?? "unknown")
    }

    /// Moves the lease's expiry on; false when it is no longer ours (another worker took it
    /// after it lapsed). A failure to reach the store is thrown: the lease may still be held.
    package func renew() async throws(StateError) -> Bool {
        guard let held = tag else { return false }
        if try await write(.ifMatch(held), now: now()) { return true }
        tag = nil
        return false
    }

    /// Writes the lease if `condition` holds; false when it does not.
    private func write(_ condition: S3Client.Condition, now: Date) async throws(StateError) -> Bool {
        do throws(StateError) {
            tag = try await store.write(key, try content(now: now), condition: condition)
            return true
        } catch {
            if error.lostCondition { return false }
            throw error
        }
    }

    /// Renews the lease every third of its time until the task is cancelled; returns when
    /// it is lost, or when it could not be renewed before it lapsed.
    package func keep() async {
        var lastRenewed = clock.now
        while !Task.isCancelled {
            do {
                try await clock.sleep(for: time / 3)
            } catch {
                return
            }
            do {
                guard try await renew() else { return }
                lastRenewed = clock.now
            } catch {
                if clock.now - lastRenewed >= time { return }
            }
        }
    }

    /// Gives the lease back, if it is still ours: removed only if it is still the object this
    /// worker last wrote, checked by the store as it removes it (a read, then a delete, would
    /// let another worker take the lease over in between, and lose it).
    package func release() async {
        guard let held = tag else { return }
        tag = nil
        try? await store.delete(key, ifTag: held)
    }
}
