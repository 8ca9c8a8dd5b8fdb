import Foundation
import Testing

/// README.md as a newcomer reads it: the lines outside code blocks.
private let prose: [Substring] = {
    let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("README.md")
    let text = (try? String(contentsOf: path, encoding: .utf8)) ?? ""
    var inCode = false
    return text.split(separator: "\n", omittingEmptySubsequences: false).filter { line in
        if line.drop(while: { $0 == " " }).hasPrefix("```") {
            inCode.toggle()
            return false
        }
        return !inCode
    }
}()

/// The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens.
private func anchor(_ heading: Substring) -> String {
    String(heading.lowercased().compactMap { character -> Character? in
        if character == " " { return "-" }
        return character.isLetter || character.isNumber || character == "-" || character == "_" ? character : nil
    })
}

@Suite("README")
struct ReadmeTests {
    @Test("the contents list links every section, in order")
    func contents() throws {
        let sections = prose.filter { $0.hasPrefix("## ") }.map { anchor($0.dropFirst(3)) }
        let heading = prose.firstIndex(of: "Contents:")
        let start = try #require(heading, "README.md has no contents list")
        let links = prose[(start + 1)...].drop { $0.isEmpty }.prefix { $0.hasPrefix("- [") }.map { line -> String in
            guard let open = line.range(of: "](#"), let close = line[open.upperBound...].firstIndex(of: ")") else { return "" }
            return String(line[open.upperBound..<close])
        }
        #expect(sections.count == 17)
        #expect(links == sections)
    }
}
