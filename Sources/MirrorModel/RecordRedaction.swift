/// A job's `drop:` and `hash:`: the fields taken out of each record before it is stored,
/// and those whose values are replaced by a salted SHA-256 of them. The walk reads every
/// path it needs (the id, `next`, `incremental`, `deleted`, `downloads`) in the record as
/// the API sent it; only the stored record, and all that is made from it, lacks them.
package import MirrorJSON

package struct RecordRedaction: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Paths whose values are removed: a member with its key, an element of an array.
    package let drop: [JSONPath]
    /// Paths whose values become the lowercase hex SHA-256 of `salt`, a 0 byte and the
    /// value's canonical JSON text (`JSONValue.appendCanonical`), as a JSON string.
    package let hash: [JSONPath]
    /// The salt: it came from `${…}` and is a secret, so it is never printed, dumped or
    /// reflected; only the hashing reads it.
    package let salt: [UInt8]

    package init(drop: [JSONPath], hash: [JSONPath], salt: [UInt8]) {
        self.drop = drop
        self.hash = hash
        self.salt = salt
    }

    /// The path of `drop` or `hash` that takes away (or hashes) the value at `path`, or a
    /// value around it: such a path leaves nothing there for a reader of the stored record.
    package func covering(_ path: JSONPath) -> (path: JSONPath, hashes: Bool)? {
        if let found = drop.first(where: { $0.mayReach(path) }) { return (found, false) }
        if let found = hash.first(where: { $0.mayReach(path) }) { return (found, true) }
        return nil
    }

    package var description: String {
        "drop [\(drop.map(\.description).joined(separator: ", "))], hash [\(hash.map(\.description).joined(separator: ", "))]"
            + " with salt \(Redactor.mask)"
    }

    package var debugDescription: String { description }
    package var customMirror: Mirror {
        Mirror(self, children: ["drop": drop.map(\.description), "hash": hash.map(\.description), "salt": Redactor.mask])
    }
}
