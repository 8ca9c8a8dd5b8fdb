import Foundation
import Yams

/// An OpenAPI description read as a plain tree of mappings, lists and scalars (JSON is read
/// as the YAML it is), with its `$ref`s followed: local ones (`#/components/schemas/Item`)
/// and ones into files beside it (`common.yaml#/components/schemas/Page`).
final class OpenAPIDocument {
    /// A mapping keeps its keys in the order written; a scalar is its text.
    indirect enum Node {
        case map(keys: [String], values: [String: Node])
        case list([Node])
        case scalar(String)

        subscript(key: String) -> Node? {
            if case let .map(_, values) = self { return values[key] }
            return nil
        }

        /// The members in the order written; none unless a mapping.
        var members: [(key: String, value: Node)] {
            if case let .map(keys, values) = self { return keys.compactMap { key in values[key].map { (key, $0) } } }
            return []
        }

        var elements: [Node] {
            if case let .list(elements) = self { return elements }
            return []
        }

        var text: String? {
            if case let .scalar(text) = self { return text }
            return nil
        }

        var int: Int? { text.flatMap { Int($0) } }
    }

    /// A node and the file its `$ref`s are read against.
    struct Located {
        let node: Node
        let file: String

        subscript(key: String) -> Located? { node[key].map { Located(node: $0, file: file) } }
    }

    let root: Located
    private var files: [String: Node] = [:]

    /// Reads `path`; a failure says what is wrong with it, for a message about the file.
    init(path: String) throws(InitFailure) {
        let file = URL(fileURLWithPath: path).standardizedFileURL.path
        let node = try Self.read(file, shown: path)
        files[file] = node
        root = Located(node: node, file: file)
    }

    private static func read(_ file: String, shown: String) throws(InitFailure) -> Node {
        guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8) else {
            throw .undecidable("cannot read \(shown): no such file or not UTF-8 text; no job written")
        }
        let composed: Yams.Node?
        do {
            composed = try Yams.compose(yaml: text)
        } catch {
            throw .undecidable("\(shown) is neither JSON nor YAML (\(String(describing: error).split(whereSeparator: \.isNewline).first ?? "")); no job written")
        }
        guard let composed else { throw .undecidable("\(shown) is empty; no job written") }
        return tree(composed)
    }

    private static func tree(_ node: Yams.Node) -> Node {
        if let mapping = node.mapping {
            var keys: [String] = []
            var values: [String: Node] = [:]
            for (key, value) in mapping {
                let name = key.string ?? ""
                if values[name] == nil { keys.append(name) }
                values[name] = tree(value)
            }
            return .map(keys: keys, values: values)
        }
        if let sequence = node.sequence { return .list(sequence.map(tree)) }
        return .scalar(node.string ?? "")
    }

    /// The node itself, or what its `$ref` (and that one's) points at.
    func resolve(_ located: Located) throws(InitFailure) -> Located {
        var current = located
        var seen: Set<String> = []
        while let reference = current.node["$ref"]?.text {
            let parts = reference.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
            if parts[0].hasPrefix("//") || parts[0].contains("://") { throw remote(reference, in: current.file) }
            var file = current.file
            if !parts[0].isEmpty {
                let folder = (current.file as NSString).deletingLastPathComponent
                file = URL(fileURLWithPath: String(parts[0]), relativeTo: URL(fileURLWithPath: folder + "/")).standardizedFileURL.path
            }
            guard seen.insert(file + "#" + (parts.count > 1 ? parts[1] : "")).inserted else {
                throw .undecidable("the $ref '\(reference)' leads back to itself; no job written")
            }
            if files[file] == nil {
                guard FileManager.default.fileExists(atPath: file) else {
                    throw .undecidable("the $ref '\(reference)' names no file beside the description; no job written")
                }
                files[file] = try Self.read(file, shown: file)
            }
            var node = files[file]!
            let pointer = parts.count > 1 ? parts[1] : ""
            for token in pointer.split(separator: "/", omittingEmptySubsequences: true) {
                let key = (String(token).removingPercentEncoding ?? String(token))
                    .replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
                if let next = node[key] {
                    node = next
                } else if let index = Int(key), node.elements.indices.contains(index) {
                    node = node.elements[index]
                } else {
                    throw .undecidable("the $ref '\(reference)' points at nothing; no job written")
                }
            }
            current = Located(node: node, file: file)
        }
        return current
    }

    /// Why a `$ref` into another host stops init: where it is (a JSON pointer into its file)
    /// and the local ref to write instead, once its file is saved beside the description.
    private func remote(_ reference: String, in file: String) -> InitFailure {
        func place(_ node: Node, _ pointer: String) -> String? {
            if node["$ref"]?.text == reference { return pointer.isEmpty ? "/" : pointer }
            for (key, value) in node.members {
                let token = key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
                if let found = place(value, pointer + "/" + token) { return found }
            }
            for (index, element) in node.elements.enumerated() {
                if let found = place(element, pointer + "/\(index)") { return found }
            }
            return nil
        }
        let shown = (file as NSString).lastPathComponent
        let parts = reference.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        let remoteFile = parts[0].split(separator: "?").first.map { ($0 as NSString).lastPathComponent } ?? ""
        let local = (remoteFile.isEmpty ? "FILE.yaml" : remoteFile) + (parts.count > 1 ? "#" + parts[1] : "")
        return .remote("\(shown)\(files[file].flatMap { place($0, "") }.map { " at " + $0 } ?? ""): the $ref '\(reference)' "
            + "is on another host and init never fetches: save that file beside \((root.file as NSString).lastPathComponent) "
            + "and point the $ref at it ('\(local)'); no job written")
    }

    /// A schema's types: `type` as a word or a list (3.1), or the one that is not null of an
    /// `anyOf`/`oneOf` (an optional member, as FastAPI writes it), or `object` for `properties`.
    func types(_ schema: Located) throws(InitFailure) -> (types: Set<String>, schema: Located) {
        let schema = try resolve(schema)
        if let word = schema.node["type"]?.text { return ([word], schema) }
        if let words = schema.node["type"]?.elements, !words.isEmpty { return (Set(words.compactMap(\.text)).subtracting(["null"]), schema) }
        for key in ["anyOf", "oneOf"] {
            guard let alternatives = schema.node[key]?.elements else { continue }
            var kept: [Located] = []
            for alternative in alternatives {
                let resolved = try resolve(Located(node: alternative, file: schema.file))
                if resolved.node["type"]?.text != "null" { kept.append(resolved) }
            }
            if kept.count == 1 { return try types(kept[0]) }
        }
        if schema.node["properties"] != nil || schema.node["allOf"] != nil { return (["object"], schema) }
        if schema.node["items"] != nil { return (["array"], schema) }
        return ([], schema)
    }

    /// An object schema's properties in the order written, `allOf`'s parts merged, and its required names.
    func properties(_ schema: Located) throws(InitFailure) -> (properties: [(name: String, schema: Located)], required: Set<String>) {
        let schema = try types(schema).schema
        var properties: [(name: String, schema: Located)] = []
        var required = Set(schema.node["required"]?.elements.compactMap(\.text) ?? [])
        for part in schema.node["allOf"]?.elements ?? [] {
            let merged = try self.properties(Located(node: part, file: schema.file))
            properties += merged.properties.filter { property in !properties.contains { $0.name == property.name } }
            required.formUnion(merged.required)
        }
        for (name, value) in schema.node["properties"]?.members ?? [] where !properties.contains(where: { $0.name == name }) {
            properties.append((name, Located(node: value, file: schema.file)))
        }
        return (properties, required)
    }

    /// The schema of an array's objects, if `schema` is an array of objects.
    func objectItems(_ schema: Located) throws(InitFailure) -> Located? {
        let (types, resolved) = try types(schema)
        guard types.contains("array"), let items = resolved["items"] else { return nil }
        let (itemTypes, item) = try self.types(items)
        return itemTypes.contains("object") ? item : nil
    }

    /// The schema of the member at a dot path of an object schema.
    func member(_ path: String, of schema: Located) throws(InitFailure) -> Located? {
        var current = schema
        for key in path.split(separator: ".") {
            guard let next = try properties(current).properties.first(where: { $0.name == key })?.schema else { return nil }
            current = next
        }
        return current
    }
}
