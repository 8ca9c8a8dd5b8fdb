import Foundation

/// The record keys (account and id) of a range of the change feed, with each one's latest
/// change. The keys' bytes are held in one buffer and a key is found by the bytes SQLite hands
/// out, so reading a long feed makes no string, and no allocation, per change.
struct KeyTable {
    /// By key, in the order keys were first inserted: the sequence number of its latest change,
    /// and whether that change is an upsert.
    var seqs: [Int] = []
    var upserts: [Bool] = []

    /// Each key's account bytes, then its id's.
    private var bytes: [UInt8] = []
    /// Where each key's bytes are, and its hash.
    private var entries: [Entry] = []
    /// Open addressing, at most half full: a key's index + 1, or 0 for a free slot.
    private var slots = [Int32](repeating: 0, count: 1024)

    private struct Entry {
        let hash: Int
        let start: Int
        let accountCount: Int32
        let idCount: Int32
    }

    var count: Int { seqs.count }

    /// The key's index, and whether it was inserted now (not there before).
    mutating func insert(account: UnsafeBufferPointer<UInt8>, id: UnsafeBufferPointer<UInt8>) -> (index: Int, new: Bool) {
        let hash = Self.hash(account, id)
        let (slot, found) = place(account, id, hash: hash)
        if let found { return (found, false) }
        let index = count
        slots[slot] = Int32(index + 1)
        entries.append(Entry(hash: hash, start: bytes.count, accountCount: Int32(account.count), idCount: Int32(id.count)))
        bytes.append(contentsOf: account)
        bytes.append(contentsOf: id)
        seqs.append(0)
        upserts.append(false)
        if 2 * count > slots.count { grow() }
        return (index, true)
    }

    /// The key's index, when it is in the table.
    func find(account: UnsafeBufferPointer<UInt8>, id: UnsafeBufferPointer<UInt8>) -> Int? {
        place(account, id, hash: Self.hash(account, id)).index
    }

    /// Calls `body` with the lookup of a key's account and id bytes by its index, valid
    /// inside `body`.
    func withKeys<Result>(
        _ body: ((Int) -> (account: UnsafeBufferPointer<UInt8>, id: UnsafeBufferPointer<UInt8>)) throws -> Result
    ) rethrows -> Result {
        try bytes.withUnsafeBufferPointer { all in
            try body { index in
                let entry = entries[index]
                let middle = entry.start + Int(entry.accountCount)
                return (UnsafeBufferPointer(rebasing: all[entry.start ..< middle]),
                        UnsafeBufferPointer(rebasing: all[middle ..< middle + Int(entry.idCount)]))
            }
        }
    }

    /// Whether two keys' parts are the same bytes.
    static func equal(_ one: UnsafeBufferPointer<UInt8>, _ other: UnsafeBufferPointer<UInt8>) -> Bool {
        guard one.count == other.count else { return false }
        guard !one.isEmpty, let first = one.baseAddress, let second = other.baseAddress else { return true }
        return memcmp(first, second, one.count) == 0
    }

    /// Twice the slots, every key placed again.
    private mutating func grow() {
        slots = [Int32](repeating: 0, count: 2 * slots.count)
        let mask = slots.count - 1
        for index in 0 ..< count {
            var slot = entries[index].hash & mask
            while slots[slot] != 0 { slot = (slot + 1) & mask }
            slots[slot] = Int32(index + 1)
        }
    }

    /// Seeded per process (Swift's `Hasher`), so that no API's ids can be chosen to collide.
    private static func hash(_ account: UnsafeBufferPointer<UInt8>, _ id: UnsafeBufferPointer<UInt8>) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: UnsafeRawBufferPointer(account))
        hasher.combine(account.count)
        hasher.combine(bytes: UnsafeRawBufferPointer(id))
        return hasher.finalize()
    }

    /// The slot that holds the key, with its index, or the free slot where it would go.
    private func place(_ account: UnsafeBufferPointer<UInt8>, _ id: UnsafeBufferPointer<UInt8>,
                       hash: Int) -> (slot: Int, index: Int?) {
        let mask = slots.count - 1
        var slot = hash & mask
        return bytes.withUnsafeBufferPointer { all in
            slots.withUnsafeBufferPointer { slots in
                while true {
                    let index = Int(slots[slot]) - 1
                    if index < 0 { return (slot, nil) }
                    let entry = entries[index]
                    let middle = entry.start + account.count
                    if entry.hash == hash, Int(entry.accountCount) == account.count, Int(entry.idCount) == id.count,
                       Self.equal(UnsafeBufferPointer(rebasing: all[entry.start ..< middle]), account),
                       Self.equal(UnsafeBufferPointer(rebasing: all[middle ..< middle + id.count]), id) {
                        return (slot, index)
                    }
                    slot = (slot + 1) & mask
                }
            }
        }
    }
}
