import Foundation

/// What is wrong with a JSON document a `Decodable` type could not read, in plain words for
/// a user: not JSON, a member missing, null, or of the wrong type, named by its path in the
/// document (`databases[1].sha256`). Never the decoder's own words. With `snakeCase`, the
/// members are named as a decoder that converts from snake case read them (`updated_at`).
enum DecodingProblem {
    static func describe(_ error: any Error, snakeCase: Bool = false) -> String {
        let path = { (keys: [any CodingKey]) in Self.path(keys, snakeCase: snakeCase) }
        guard let error = error as? DecodingError else { return "it cannot be read" }
        switch error {
        case let .dataCorrupted(context) where context.codingPath.isEmpty:
            return "it is not JSON"
        case let .dataCorrupted(context):
            return "member '\(path(context.codingPath))' holds a value that cannot be read"
        case let .keyNotFound(key, context):
            return "member '\(path(context.codingPath + [key]))' is missing"
        case let .valueNotFound(_, context):
            return "member '\(path(context.codingPath))' is null"
        case let .typeMismatch(type, context) where context.codingPath.isEmpty:
            return "it is not \(expected(type))"
        case let .typeMismatch(type, context):
            return "member '\(path(context.codingPath))' is not \(expected(type))"
        @unknown default:
            return "it cannot be read"
        }
    }

    /// `databases[1].sha256`.
    private static func path(_ keys: [any CodingKey], snakeCase: Bool) -> String {
        var text = ""
        for key in keys {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                let name = snakeCase ? key.stringValue.reduce(into: "") { name, character in
                    name += character.isUppercase ? "_" + character.lowercased() : String(character)
                } : key.stringValue
                text += (text.isEmpty ? "" : ".") + name
            }
        }
        return text
    }

    private static func expected(_ type: Any.Type) -> String {
        switch "\(type)" {
        case "Int", "Int64", "UInt64": "a whole number"
        case "Double", "Float": "a number"
        case "String": "a string"
        case "Bool": "true or false"
        case let name where name.hasPrefix("Array"): "an array"
        default: "an object"
        }
    }
}
