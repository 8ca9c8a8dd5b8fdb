import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import MirrorStore
@_spi(CustomByteBufferAllocator) import NIOCore
import Synchronization

/// Replayed pages as they were last assembled, kept in memory to be sent again without
/// looking up their records: each with the moment of the output folder's databases it was
/// assembled at (see `CommitWatcher`), and its ETag. An answer is sent from here only when
/// nothing was committed to any database since that moment, or when the page's ETag, read
/// again, is still its own: the ETag changes with the envelope, the ids and any record of
/// the database (the change feed's last `seq`), so the same ETag is the same body. Held in
/// one `ByteBuffer` a page that every answer shares, never copied to be sent (Hummingbird 2
/// writes buffers only: no file region, so no `sendfile`), and sent with its head in one
/// write; at most `limit` bytes of bodies, headers and keys, the least recently sent
/// evicted first. A page larger than `ReplayedPages.chunk`, which is streamed, is not kept.
final class PageCache: Sendable {
    /// What decides a replayed page's answer besides the databases: the request's target and
    /// body, and the origin its URLs point to.
    struct Key: Hashable, Sendable {
        let target: String
        let body: [UInt8]
        let origin: String
    }

    /// A page's answer, as it is sent.
    struct Entry: Sendable {
        let status: Int
        /// Its headers, `Content-Type` and `ETag` among them.
        let fields: HTTPFields
        let etag: String
        /// The body, in a buffer of its own size (see `buffer`).
        let body: ByteBuffer
        /// When nothing it is made of has changed since: when it was assembled, or last
        /// found to have the same ETag; nil for an answer assembled at no known moment,
        /// which is not kept.
        var moment: CommitWatcher.Moment?

        /// The answer, or 304 with its headers but `Content-Type` when `ifNoneMatch` names its tag.
        func response(ifNoneMatch: String?) -> Response {
            guard !EntityTags.match(ifNoneMatch, etag) else {
                var fields = fields
                fields[.contentType] = nil
                return Response(status: .notModified, headers: fields, body: ResponseBody())
            }
            return Response(status: .init(code: status), headers: fields, body: ResponseBody(byteBuffer: body))
        }

        /// `bytes` in a buffer whose capacity is their count. NIO gives a buffer it allocates
        /// a power of two of capacity, so a page of 85 KB would hold 128 KB; this one is
        /// allocated here, at the size of the page, and handed to NIO, which frees it
        /// (`free`, as its default allocator does) when the last answer sending it is done.
        static func buffer(_ bytes: [UInt8]) -> ByteBuffer {
            guard !bytes.isEmpty, let memory = malloc(bytes.count) else { return ByteBuffer(bytes: bytes) }
            let raw = UnsafeMutableRawBufferPointer(start: memory, count: bytes.count)
            raw.copyBytes(from: bytes)
            return ByteBuffer(takingOwnershipOf: raw, allocator: ByteBufferAllocator())
        }

        /// The bytes it holds, counted against the limit: the body's buffer, the headers,
        /// the key, and a little for the rest.
        func cost(_ key: Key) -> Int {
            body.capacity + fields.reduce(0) { $0 + $1.name.rawName.utf8.count + $1.value.utf8.count }
                + etag.utf8.count + key.target.utf8.count + key.body.count + key.origin.utf8.count + 256
        }
    }

    /// What the cache did, for the tests and the curious.
    struct Statistics: Sendable, Equatable {
        /// Answers sent from the cache.
        var hits = 0
        /// Answers assembled from the records and kept.
        var kept = 0
        /// Entries let go to stay within the limit.
        var evicted = 0
        /// Entries held now, and the bytes they count.
        var entries = 0
        var bytes = 0
    }

    /// The bytes the entries may count; 0 keeps none.
    let limit: Int
    private let state = Mutex(State())

    init(limit: Int) {
        self.limit = max(0, limit)
    }

    var statistics: Statistics { state.withLock { $0.statistics } }

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
