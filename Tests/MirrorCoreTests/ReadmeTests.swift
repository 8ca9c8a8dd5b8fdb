import Foundation
@testable import MirrorJobFile
@testable import MirrorRemote
import Testing

/// The repository's folder.
private let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// A Markdown file of the repository as a newcomer reads it: the lines outside code blocks.
private func prose(_ path: String) -> [Substring] {
    let text = (try? String(contentsOf: repository.appendingPathComponent(path), encoding: .utf8)) ?? ""
    var inCode = false
    return text.split(separator: "\n", omittingEmptySubsequences: false).filter { line in
        if line.drop(while: { $0 == " " }).hasPrefix("```") {
            inCode.toggle()
            return false
        }
        return !inCode
    }
}

/// The pages of docs/, by file name, sorted.
private let docs: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: repository.appendingPathComponent("docs").path)) ?? [])
    .filter { $0.hasSuffix(".md") }.sorted()

/// The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens.
private func anchor(_ heading: Substring) -> String {
    String(heading.lowercased().compactMap { character -> Character? in
        if character == " " { return "-" }
        return character.isLetter || character.isNumber || character == "-" || character == "_" ? character : nil
    })
}

@Suite("README", .timeLimit(.minutes(6)))
struct ReadmeTests {
    @Test("the contents list links every section of README, in order, then every page of docs/")
    func contents() throws {
        let readme = prose("README.md")
        let sections = readme.filter { $0.hasPrefix("## ") }.map { "#" + anchor($0.dropFirst(3)) }
        let heading = readme.firstIndex(of: "Contents:")
        let start = try #require(heading, "README.md has no contents list")
        let links = readme[(start + 1)...].drop { $0.isEmpty }.prefix { $0.hasPrefix("- [") }.map { line -> String in
            guard let open = line.range(of: "]("), let close = line[open.upperBound...].firstIndex(of: ")") else { return "" }
            return String(line[open.upperBound..<close])
        }
        #expect(sections == ["#install", "#your-first-job", "#on-the-device", "#commands"])
        #expect(docs.count == 14)
        #expect(links.prefix(sections.count) == sections[...])
        #expect(links.dropFirst(sections.count).sorted() == docs.map { "docs/" + $0 })
    }

    @Test("each page of docs/ starts with its title and a link back to README")
    func pageOpenings() {
        for page in docs {
            let lines = prose("docs/" + page)
            #expect(lines.first?.hasPrefix("# ") == true, "docs/\(page)")
            #expect(Array(lines.dropFirst().prefix(3)) == ["", "[← README](../README.md)", ""], "docs/\(page)")
        }
    }

    /// The keys a cell of docs/authentication.md's table names: each word in backticks, but for those in
    /// parentheses (defaults and notes).
    private static func keys(in cell: Substring) -> Set<String> {
        var keys: Set<String> = [], word = "", depth = 0, quoted = false
        for character in cell {
            if character == "`" {
                if quoted, depth == 0 { keys.insert(word) }
                quoted.toggle()
                word = ""
            } else if quoted {
                word.append(character)
            } else if character == "(" {
                depth += 1
            } else if character == ")" {
                depth -= 1
            }
        }
        return keys
    }

    @Test("the table of auth keys lists exactly the keys each type takes, its required ones as required")
    func authKeys() throws {
        let page = prose("docs/authentication.md")
        let header = page.firstIndex(of: "| `type` | required | optional (the default) |")
        let start = try #require(header, "docs/authentication.md has no table of every auth key")
        var rows: [String: (required: Set<String>, all: Set<String>)] = [:]
        for line in page[(start + 2)...].prefix(while: { $0.hasPrefix("| ") }) {
            let cells = line.dropFirst(2).dropLast(2).components(separatedBy: " | ").map { Substring($0) }
            try #require(cells.count == 3, "\(line)")
            let required = Self.keys(in: cells[1])
            rows[String(cells[0].dropFirst().dropLast())] = (required, required.union(Self.keys(in: cells[2])))
        }
        #expect(rows.keys.sorted() == AuthType.allCases.map(\.rawValue).sorted())
        for type in AuthType.allCases {
            let row = try #require(rows[type.rawValue])
            #expect(Set(type.required.map(\.rawValue)).isSubset(of: row.required), "\(type.rawValue)")
            #expect(row.all == Set(type.keys.map(\.rawValue)).subtracting(["type"]), "\(type.rawValue)")
        }
    }

    @Test("the lease refusal is quoted as mirror words it")
    func leaseRefusal() {
        let refusal = LeaseHeldError(location: "s3://bucket/mirror/state", key: "shards/2-of-4/lease.json",
                                     holder: "mirror-29412060-2-x7kq9 pid 7", expiresAt: "2026-11-28T10:01:00.000Z")
        let text = prose("docs/deploying.md").joined(separator: " ").split(whereSeparator: \.isWhitespace).joined(separator: " ")
        let quoted = text.contains("`error: \(refusal)`")
        #expect(quoted, "docs/deploying.md does not quote `error: \(refusal)`")
    }

    /// The anchors of a Markdown file's headings, as GitHub numbers a repeated one (`-1`, `-2`, …).
    private static func anchors(_ path: String) -> Set<String> {
        var seen: [String: Int] = [:]
        return Set(prose(path).compactMap { line -> String? in
            let hashes = line.prefix { $0 == "#" }
            guard (1...6).contains(hashes.count), line.dropFirst(hashes.count).hasPrefix(" ") else { return nil }
            let base = anchor(line.dropFirst(hashes.count + 1))
            let count = seen[base, default: 0]
            seen[base] = count + 1
            return count == 0 ? base : "\(base)-\(count)"
        })
    }

    /// The targets of the Markdown links on a line: `[text](target)`.
    private static func targets(_ line: Substring) -> [Substring] {
        var targets: [Substring] = []
        var rest = line[...]
        while let open = rest.range(of: "]("), let close = rest[open.upperBound...].firstIndex(of: ")") {
            targets.append(rest[open.upperBound..<close])
            rest = rest[close...]
        }
        return targets
    }

    /// `path` as named from `page`, from the repository's folder: `../README.md` from `docs/serve.md` is `README.md`.
    private static func resolve(_ path: Substring, from page: String) -> String {
        var parts = page.split(separator: "/").dropLast().map(String.init)
        for part in path.split(separator: "/") {
            if part == ".." { _ = parts.popLast() } else if part != "." { parts.append(String(part)) }
        }
        return parts.joined(separator: "/")
    }

    @Test("every relative link of README.md and docs/ names a file there is, and a heading of it")
    func links() {
        let pages = ["README.md"] + docs.map { "docs/" + $0 }
        var broken: [String] = []
        for page in pages {
            for target in prose(page).flatMap(Self.targets) where !target.hasPrefix("http://") && !target.hasPrefix("https://") {
                let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let file = parts[0].isEmpty ? page : Self.resolve(parts[0], from: page)
                guard FileManager.default.fileExists(atPath: repository.appendingPathComponent(file).path) else {
                    broken.append("\(page): '\(target)': no file '\(file)'")
                    continue
                }
                if parts.count == 2, !Self.anchors(file).contains(String(parts[1])) {
                    broken.append("\(page): '\(target)': no heading of \(file) has the anchor '\(parts[1])'")
                }
            }
        }
        #expect(pages.count == 15)
        #expect(broken == [])
    }
}
