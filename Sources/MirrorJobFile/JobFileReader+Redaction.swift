import MirrorJSON
import MirrorModel
import Yams

/// `drop` and `hash`: record fields taken out, or replaced by a salted SHA-256, before a
/// record is stored.
extension JobFileReader {
    /// The shortest salt taken: a short one lets whoever holds the stored hashes hash
    /// guesses until one matches.
    static let shortestSalt = 16

    /// `drop: [paths]` and `hash: {salt: "${VAR}", paths: [paths]}`. The salt joins
    /// `redactor` as the secret it is. None of their paths may reach the job's `id`, a
    /// field both drops and hashes, a dropped path may not empty a column or an `explode`
    /// list, nor a hashed one hide a column's value or a list inside its hash.
    mutating func readRedaction(_ job: JobNodes, id: JSONPath?, columns: [RecordColumn], explode: [ExplodedList],
                                redactor: inout Redactor) -> RecordRedaction? {
        let dropNode = job.keys[.drop]?.value
        let hashNode = job.keys[.hash]?.value
        guard dropNode != nil || hashNode != nil else { return nil }
        let drop = dropNode.map { redactionPaths($0, key: "drop") } ?? []
        var hash: [(path: JSONPath, node: Node)] = []
        var salt: [UInt8]?
        var failed = false
        if let hashNode {
            if case .mapping = hashNode {
                let map = mapping(hashNode, keys: HashKey.self, context: "hash")
                if let node = map[.salt]?.value {
                    salt = readSalt(node, redactor: &redactor)
                } else {
                    error(hashNode, "'hash' needs 'salt', a secret from an environment variable such as \"${MIRROR_SALT}\"")
                }
                if let node = map[.paths]?.value {
                    hash = redactionPaths(node, key: "hash.paths")
                } else {
                    error(hashNode, "'hash' needs 'paths', the record paths whose values are hashed")
                }
            } else {
                error(hashNode, "'hash' must be a mapping with salt and paths, such as { salt: \"${MIRROR_SALT}\", paths: [email] }")
            }
            failed = salt == nil
        }

        for (path, node) in drop {
            if let id, path.mayReach(id) {
                error(node, "'drop' path '\(path)' takes away the job's id ('\(id)'): the id is stored as it is")
                failed = true
            }
            for column in columns where path.mayReach(column.path) {
                error(node, "'drop' path '\(path)' leaves column '\(column.name)' ('\(column.path)') nothing to read: "
                    + "drop the column, or keep the field")
                failed = true
            }
            for list in explode {
                if path.mayReach(list.path) {
                    error(node, "'drop' path '\(path)' leaves list '\(list.name)' ('\(list.path)') nothing to read: "
                        + "drop the list, or keep the field")
                    failed = true
                    continue
                }
                for column in list.columns where path.mayReach(Self.elementPath(column, of: list)) {
                    error(node, "'drop' path '\(path)' leaves column '\(column.name)' of list '\(list.name)' "
                        + "('\(column.path)' in each element of '\(list.path)') nothing to read: drop the column, or keep the field")
                    failed = true
                }
            }
        }
        for (path, node) in hash {
            if let dropped = drop.first(where: { $0.path.mayReach(path) || path.mayReach($0.path) }) {
                error(node, "'hash.paths' path '\(path)' is dropped too ('drop' path '\(dropped.path)'): "
                    + "a field is dropped or hashed, not both")
                failed = true
            }
            if let id, path.mayReach(id) {
                error(node, "'hash.paths' path '\(path)' hashes the job's id ('\(id)'): the id is stored as it is")
                failed = true
            }
            for column in columns where path.mayReach(column.path) && path.segments.count < column.path.segments.count {
                error(node, "'hash.paths' path '\(path)' leaves column '\(column.name)' ('\(column.path)') nothing to read: "
                    + "a column may hold a hashed value, not a field inside one")
                failed = true
            }
            for list in explode {
                if path.mayReach(list.path) {
                    error(node, "'hash.paths' path '\(path)' leaves list '\(list.name)' ('\(list.path)') nothing to read: "
                        + "a hash is a string, never a list; hash the elements' fields instead")
                    failed = true
                    continue
                }
                let inside = list.columns.filter {
                    let reached = Self.elementPath($0, of: list)
                    return path.mayReach(reached) && path.segments.count < reached.segments.count
                }
                for column in inside {
                    error(node, "'hash.paths' path '\(path)' leaves column '\(column.name)' of list '\(list.name)' "
                        + "('\(column.path)' in each element of '\(list.path)') nothing to read: "
                        + "a column may hold a hashed value, not a field inside one")
                    failed = true
                }
            }
        }
        guard !failed else { return nil }
        return RecordRedaction(drop: drop.map(\.path), hash: hash.map(\.path), salt: salt ?? [])
    }

    /// Where an element column of `list` reads in a record: the list's path, any element,
    /// the column's path.
    static func elementPath(_ column: RecordColumn, of list: ExplodedList) -> JSONPath {
        JSONPath(segments: list.path.segments + [.wildcard] + column.path.segments,
                 description: "\(list.path) > \(column.path)")
    }

    /// A record path or a list of them; `.`, the record itself, is not one.
    private mutating func redactionPaths(_ node: Node, key: String) -> [(path: JSONPath, node: Node)] {
        let items: [Node]
        switch node {
        case let .sequence(sequence): items = Array(sequence)
        case .scalar: items = [node]
        default:
            error(node, "'\(key)' must be a record path or a list of them, such as [email, contact.phone]")
            return []
        }
        var paths: [(path: JSONPath, node: Node)] = []
        for item in items {
            guard let path = path(item, key: key) else { continue }
            if path.segments.isEmpty {
                error(item, "'\(key)' cannot be '.': a path names a field of the record, not the record itself")
            } else if !paths.contains(where: { $0.path.segments == path.segments }) {
                paths.append((path, item))
            }
        }
        return paths
    }

    /// `hash.salt`: a string holding `${VAR}` whose variable is a secret (not in
    /// `not_secret`), at least `shortestSalt` bytes long. Its value is never shown.
    private mutating func readSalt(_ node: Node, redactor: inout Redactor) -> [UInt8]? {
        guard let text = string(node, key: "hash.salt") else { return nil }
        guard !text.secrets.isEmpty else {
            error(node, "'hash.salt' must come from an environment variable that 'not_secret' does not list, "
                + "such as \"${MIRROR_SALT}\": the salt is a secret")
            return nil
        }
        guard text.value.utf8.count >= Self.shortestSalt else {
            let names = text.secrets.map(\.name).joined(separator: ", ")
            error(node, "'hash.salt' must be at least \(Self.shortestSalt) bytes long (check \(names)): "
                + "with a short salt, whoever holds the hashes can hash guesses until one matches")
            return nil
        }
        redactor = redactor.merged(with: Redactor(secrets: text.secrets))
        return Array(text.value.utf8)
    }
}
