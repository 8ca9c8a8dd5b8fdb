import Crypto
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Foundation
import Logging
import MirrorJSON
import MirrorModel
import Synchronization

/// What one device may read: the accounts and tables its token names (nil: every one).
package struct DeviceScope: Sendable {
    /// The token's name, for logs; never the token.
    package let name: String
    package let accounts: Set<String>?
    package let tables: Set<String>?

    /// Whether every account and table may be read: the status page, the list of tables and
    /// the downloaded files (which records of several accounts may share) are read with such
    /// a token only.
    var isWhole: Bool { accounts == nil && tables == nil }

    /// Whether `account` (nil: every account) of `table` may be read.
    func permits(table: String, account: String?) -> Bool {
        (tables?.contains(table) ?? true) && (accounts.map { allowed in account.map(allowed.contains) ?? false } ?? true)
    }
}

/// The device tokens of `mirror serve --device-tokens FILE`: one JSON object a line,
/// `{"name":"kiosk-3","sha256":"<64 hex digits>","accounts":["north"],"tables":"*"}`, where
/// `sha256` is the SHA-256 of the token (the token itself is never stored) and `"*"` names
/// every account or table. Empty lines and lines starting with `#` are skipped.
package struct DeviceTokens: Sendable {
    private struct Entry: Sendable {
        let hash: [UInt8]
        let scope: DeviceScope
    }

    private enum Key: String, CaseIterable {
        case name, sha256, accounts, tables
    }

    private let entries: [Entry]

    /// Reads `file`; a line that cannot be used is `FILE:LINE: what is wrong`.
    package init(file: String) throws(MirrorServer.ListenFailure) {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw MirrorServer.ListenFailure(description: "\(file): cannot be read (no such file, or permissions?)")
        }
        var entries: [Entry] = []
        for (index, line) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let text = line.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty, !text.hasPrefix("#") else { continue }
            func failure(_ problem: String) -> MirrorServer.ListenFailure {
                MirrorServer.ListenFailure(description: "\(file):\(index + 1): \(problem)")
            }
            guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else {
                throw failure("not a JSON object such as {\"name\":\"kiosk-3\",\"sha256\":\"…\",\"accounts\":[\"a\"],\"tables\":\"*\"}")
            }
            if let unknown = object.keys.sorted().first(where: { Key(rawValue: $0) == nil }) {
                throw failure("unknown key '\(unknown)' (keys: name, sha256, accounts, tables)")
            }
            guard let name = object[Key.name.rawValue] as? String, !name.isEmpty else {
                throw failure("'name' must be a name for logs, such as \"kiosk-3\"")
            }
            let sha256 = (object[Key.sha256.rawValue] as? String)?.lowercased() ?? ""
            guard sha256.utf8.count == 64, let hash = Self.bytes(hex: sha256) else {
                throw failure("'sha256' must be the SHA-256 of a token, 64 hex digits, not '\(sha256)'")
            }
            func names(_ key: Key) throws(MirrorServer.ListenFailure) -> Set<String>? {
                if object[key.rawValue] as? String == "*" { return nil }
                guard let list = object[key.rawValue] as? [String], !list.isEmpty else {
                    throw failure("'\(key.rawValue)' must be \"*\" or a list of names, such as [\"north\"]")
                }
                return Set(list)
            }
            let scope = DeviceScope(name: name, accounts: try names(.accounts), tables: try names(.tables))
            entries.append(Entry(hash: hash, scope: scope))
        }
        self.entries = entries
    }

    /// The scope of `token`, nil when no line holds its hash. Every line is compared, each
    /// in full, whatever matched: how long this takes tells nothing of the hashes held.
    package func scope(of token: String) -> DeviceScope? {
        let presented = Array(SHA256.hash(data: Array(token.utf8)))
        var found: DeviceScope?
        for entry in entries {
            var difference: UInt8 = 0
            for (held, given) in zip(entry.hash, presented) { difference |= held ^ given }
            if difference == 0 { found = entry.scope }
        }
        return found
    }

    /// Makes a token for `accounts` and `tables` (`["*"]`: every one), appends its line to
    /// `file` (made, readable by its owner alone, if it is not there) and returns the token,
    /// which is stored nowhere.
    package static func add(name: String, accounts: [String], tables: [String], to file: String)
        throws(MirrorServer.ListenFailure) -> String {
        var random = SystemRandomNumberGenerator()
        let token = Data((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &random) }).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        var line: [UInt8] = Array("{\"name\":".utf8)
        JSONText.appendQuoted(name, to: &line)
        line += Array(",\"sha256\":\"\(Hex.string(SHA256.hash(data: Array(token.utf8))))\"".utf8)
        for (key, names) in [("accounts", accounts), ("tables", tables)] {
            line += Array(",\"\(key)\":".utf8)
            if names == ["*"] {
                line += Array("\"*\"".utf8)
            } else {
                line.append(UInt8(ascii: "["))
                for (index, name) in names.enumerated() {
                    if index > 0 { line.append(UInt8(ascii: ",")) }
                    JSONText.appendQuoted(name, to: &line)
                }
                line.append(UInt8(ascii: "]"))
            }
        }
        line += Array("}\n".utf8)
        if !FileManager.default.fileExists(atPath: file) {
            guard FileManager.default.createFile(atPath: file, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw MirrorServer.ListenFailure(description: "\(file): cannot be made (does its folder exist?)")
            }
        }
        do {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
            defer { try? handle.close() }
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(line))
        } catch {
            throw MirrorServer.ListenFailure(description: "\(file): cannot be written: \(error.localizedDescription)")
        }
        return token
    }

    private static func bytes(hex: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        var high: UInt8?
        for character in hex.utf8 {
            let value: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = character - UInt8(ascii: "a") + 10
            default: return nil
            }
            if let first = high {
                bytes.append(first << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        return bytes
    }
}

/// The device token file serve reads, read again on a reload (SIGHUP).
final class DeviceTokenFile: Sendable {
    let path: String
    private let current: Mutex<DeviceTokens>

    init(path: String) throws(MirrorServer.ListenFailure) {
        self.path = path
        current = Mutex(try DeviceTokens(file: path))
    }

    var tokens: DeviceTokens {
        current.withLock { $0 }
    }

    /// Reads the file again; when it cannot be used, the tokens read before stay.
    func reload(logger: Logger) {
        do {
            let tokens = try DeviceTokens(file: path)
            current.withLock { $0 = tokens }
            logger.info("device tokens read again", metadata: ["file": "\(path)"])
        } catch {
            logger.error("device tokens not read again; the previous ones are used", metadata: ["reason": "\(error)"])
        }
    }
}

/// Answers with 401 a request that carries no device token, or one that is not in the file,
/// and gives the request's context the scope of the token it carries.
struct DeviceAuthorization: RouterMiddleware {
    typealias Context = ServeContext
    let file: DeviceTokenFile

    func handle(_ request: Request, context: ServeContext,
                next: (Request, ServeContext) async throws -> Response) async throws -> Response {
        guard let field = request.headers[.authorization], field.count > 7,
              field.prefix(7).lowercased() == "bearer " else {
            throw HTTPError(.unauthorized, headers: [.wwwAuthenticate: "Bearer"],
                            message: "a device token is needed: send it as Authorization: Bearer TOKEN")
        }
        guard let scope = file.tokens.scope(of: String(field.dropFirst(7)).trimmingCharacters(in: .whitespaces)) else {
            throw HTTPError(.unauthorized, headers: [.wwwAuthenticate: #"Bearer error="invalid_token""#],
                            message: "this device token is not one of this server's")
        }
        var context = context
        context.device = scope
        return try await next(request, context)
    }

    /// What a token is told about anything its scope lacks, whether it exists or not.
    static let refused = HTTPError(.forbidden, message: "this token may not read that: ask with a token of its account and table")
}
