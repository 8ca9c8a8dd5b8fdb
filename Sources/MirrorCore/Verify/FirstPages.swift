/// The page each id of a walk was first seen on, kept compactly for `verify`'s drift
/// check: the ids' bytes one after another, 16 bytes an id beside them, and a table of
/// 4-byte slots at most half full. A walk of four million short ids holds about 100 MB,
/// not the half gigabyte a dictionary of strings takes.

struct FirstPages {
    /// Id `i` is `bytes[starts[i] ..< starts[i + 1]]`, first seen on `pages[i]`.
    private var bytes: [UInt8] = []
    private var starts: [Int] = [0]
    private var pages: [Int] = []
    private var slots = [Int32](repeating: -1, count: 1024)

    var count: Int { pages.count }

    /// Notes `id`, seen on `page`. If it was seen before, the page it was first seen on.
    mutating func note(_ id: UnsafeBufferPointer<UInt8>, page: Int) -> Int? {
        if 2 * (count + 1) > slots.count { grow() }
        var slot = Self.hash(id) & (slots.count - 1)
        while true {
            let index = Int(slots[slot])
            if index < 0 { break }
            if bytes[starts[index] ..< starts[index + 1]].elementsEqual(id) { return pages[index] }
            slot = (slot + 1) & (slots.count - 1)
        }
        slots[slot] = Int32(count)
        bytes.append(contentsOf: id)
        starts.append(bytes.count)
        pages.append(page)
        return nil
    }

    private mutating func grow() {
        slots = [Int32](repeating: -1, count: slots.count * 2)
        let mask = slots.count - 1
        bytes.withUnsafeBufferPointer { all in
            for index in 0 ..< count {
                var slot = Self.hash(UnsafeBufferPointer(rebasing: all[starts[index] ..< starts[index + 1]])) & mask
                while slots[slot] >= 0 { slot = (slot + 1) & mask }
                slots[slot] = Int32(index)
            }
        }
    }

    private static func hash(_ id: UnsafeBufferPointer<UInt8>) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: UnsafeRawBufferPointer(id))
        return hasher.finalize()
    }
}
