import MirrorStore
import Synchronization

/// Replayed pages as they were last assembled, kept in memory to be sent again without
/// looking up their records: each with the moment of the output folder's databases it was
/// assembled at (see `CommitWatcher`), and its ETag. An answer is sent from here only when
/// nothing was committed to any database since that moment, or when the page's ETag, read
/// again, is still its own: the ETag changes with the envelope, the ids and any record of
/// the database (the change feed's last `seq`), so the same ETag is the same body. Held in
/// the form its server sends it (`form`: `mirror serve` holds one `ByteBuffer` a page that
/// every answer shares, never copied to be sent), at most `limit` bytes of bodies, headers
/// and keys, the least recently sent evicted first. A page larger than
/// `ReplayedPages.chunk`, which is streamed, is not kept.
package final class PageCache: Sendable {
    /// What decides a replayed page's answer besides the databases: the request's target and
    /// body, and the origin its URLs point to.
    package struct Key: Hashable, Sendable {
        let target: String
        let body: [UInt8]
        let origin: String
    }

    /// A page's answer, as it is sent.
    package struct Entry: Sendable {
        package let status: Int
        /// Its headers, `Content-Type` and `ETag` among them, and its body, in its server's form.
        package let answer: any KeptAnswer
        package let etag: String
        /// When nothing it is made of has changed since: when it was assembled, or last
        /// found to have the same ETag; nil for an answer assembled at no known moment,
        /// which is not kept.
        var moment: CommitWatcher.Moment?

        /// The bytes it holds, counted against the limit: the answer's body and headers,
        /// the key, and a little for the rest.
        func cost(_ key: Key) -> Int {
            answer.heldBytes + etag.utf8.count + key.target.utf8.count + key.body.count + key.origin.utf8.count + 256
        }
    }

    /// What the cache did, for the tests and the curious.
    package struct Statistics: Sendable, Equatable {
        /// Answers sent from the cache.
        package var hits = 0
        /// Answers assembled from the records and kept.
        package var kept = 0
        /// Entries let go to stay within the limit.
        package var evicted = 0
        /// Entries held now, and the bytes they count.
        package var entries = 0
        package var bytes = 0

        package init() {}
    }

    /// The bytes the entries may count; 0 keeps none.
    package let limit: Int
    /// The form answers are kept in: its server's own.
    package let form: any KeptAnswer.Type
    private let state = Mutex(State())

    package init(limit: Int, form: any KeptAnswer.Type = KeptBytes.self) {
        self.limit = max(0, limit)
        self.form = form
    }

    package var statistics: Statistics { state.withLock { $0.statistics } }

    /// The entry for `key` when it was assembled, or found current, at `moment`.
    func entry(_ key: Key, at moment: CommitWatcher.Moment) -> Entry? {
        state.withLock { state in
            guard let slot = state.index[key], let entry = state.slots[slot]?.entry, entry.moment == moment else { return nil }
            state.touch(slot)
            state.statistics.hits += 1
            return entry
        }
    }

    /// The entry for `key` when its ETag is `etag`: nothing its body is made of changed, so
    /// it is current at `moment`, the moment before the tag was read.
    func entry(_ key: Key, etag: String, currentAt moment: CommitWatcher.Moment) -> Entry? {
        state.withLock { state in
            guard let slot = state.index[key], var entry = state.slots[slot]?.entry, entry.etag == etag else { return nil }
            entry.moment = moment
            state.slots[slot]?.entry = entry
            state.touch(slot)
            state.statistics.hits += 1
            return entry
        }
    }

    /// Keeps `entry` for `key`, in place of any before, evicting the least recently sent
    /// entries until the rest fit the limit. An entry larger than the limit is not kept.
    func keep(_ entry: Entry, for key: Key) {
        let cost = entry.cost(key)
        guard entry.moment != nil, cost <= limit else { return }
        state.withLock { state in
            if let slot = state.index[key] { state.remove(slot) }
            while state.statistics.bytes + cost > limit, let oldest = state.oldest {
                state.remove(oldest)
                state.statistics.evicted += 1
            }
            state.insert(key, entry, cost: cost)
            state.statistics.kept += 1
        }
    }

    /// The entries in a list from the most recently sent to the least, in slots reused as
    /// entries come and go.
    private struct State {
        struct Slot {
            var key: Key
            var entry: Entry
            var cost: Int
            var newer: Int?
            var older: Int?
        }

        var index: [Key: Int] = [:]
        /// nil where an entry was let go and none is yet.
        var slots: [Slot?] = []
        var free: [Int] = []
        var newest: Int?
        var oldest: Int?
        var statistics = Statistics()

        mutating func insert(_ key: Key, _ entry: Entry, cost: Int) {
            let slot = Slot(key: key, entry: entry, cost: cost)
            let at: Int
            if let reused = free.popLast() {
                slots[reused] = slot
                at = reused
            } else {
                slots.append(slot)
                at = slots.count - 1
            }
            index[key] = at
            link(at)
            statistics.entries += 1
            statistics.bytes += cost
        }

        mutating func remove(_ slot: Int) {
            unlink(slot)
            guard let removed = slots[slot] else { return }
            index[removed.key] = nil
            statistics.entries -= 1
            statistics.bytes -= removed.cost
            slots[slot] = nil
            free.append(slot)
        }

        /// Makes `slot` the most recently sent.
        mutating func touch(_ slot: Int) {
            guard newest != slot else { return }
            unlink(slot)
            link(slot)
        }

        private mutating func link(_ slot: Int) {
            slots[slot]?.older = newest
            slots[slot]?.newer = nil
            if let newest { slots[newest]?.newer = slot }
            newest = slot
            if oldest == nil { oldest = slot }
        }

        private mutating func unlink(_ slot: Int) {
            let (newer, older) = (slots[slot]?.newer, slots[slot]?.older)
            if let newer { slots[newer]?.older = older } else { newest = older }
            if let older { slots[older]?.newer = newer } else { oldest = newer }
            slots[slot]?.newer = nil
            slots[slot]?.older = nil
        }
    }
}
