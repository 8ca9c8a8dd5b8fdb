import Foundation
import Testing

/// The test sources: every Swift file under Tests/, as (path from the package's root, text).
private let testSources: [(path: String, text: String)] = {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    let files = FileManager.default.enumerator(atPath: root.appendingPathComponent("Tests").path)?
        .compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }.sorted() ?? []
    return files.map { file in
        ("Tests/" + file, (try? String(contentsOf: root.appendingPathComponent("Tests/" + file), encoding: .utf8)) ?? "")
    }
}()

/// Where the `@Suite` or `@Test` attribute at the start of `text` ends: after its
/// parenthesized traits, if it has any (string literals in them skipped); nil while they
/// are still open.
private func attributeEnd(_ text: String) -> String.Index? {
    var index = text.firstIndex { !$0.isLetter && $0 != "@" } ?? text.endIndex
    guard index < text.endIndex, text[index] == "(" else { return index }
    var depth = 0
    var quoted = false
    var escaped = false
    while index < text.endIndex {
        let character = text[index]
        if quoted {
            if escaped {
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted = false
            }
        } else if character == "\"" {
            quoted = true
        } else if character == "(" {
            depth += 1
        } else if character == ")" {
            depth -= 1
            if depth == 0 { return text.index(after: index) }
        }
        index = text.index(after: index)
    }
    return nil
}

/// The suites and tests in `source` that run with no time limit, each as `file:line: what`:
/// a `@Suite` without a `.timeLimit` trait, and a `@Test` without one that no `@Suite` is
/// around (a test at the top level, or in a type with no `@Suite`, whose suite Swift Testing
/// makes up). A suite's limit covers the suites nested in it; an extension is covered when
/// its type is in `limited`, the names of the suites with a limit. Reads the code by its
/// lines and indentation, skipping comments and multi-line strings.
func untimed(_ source: String, file: String, limited: Set<String>) -> (problems: [String], limited: Set<String>) {
    var problems: [String] = []
    var limited = limited
    // The types the current line is in, innermost last: their indentation, whether a
    // `@Suite` is on them or around them, and whether a time limit covers their tests.
    var types: [(indent: Int, suite: Bool, limited: Bool)] = []
    // The attributes before the next declaration; one whose traits go on to the next line.
    var attributes: [(isSuite: Bool, line: Int, limited: Bool)] = []
    var open: (line: Int, text: String)?
    var inString = false
    let modifiers: Set<Substring> = ["private", "fileprivate", "internal", "package", "public", "final", "static",
                                     "nonisolated", "mutating", "@MainActor", "@available", "@Sendable"]
    for (offset, line) in source.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
        let number = offset + 1
        let quotes = line.components(separatedBy: "\"\"\"").count - 1
        if inString {
            if quotes % 2 == 1 { inString = false }
            continue
        }
        if quotes % 2 == 1 { inString = true }
        let indent = line.prefix { $0 == " " }.count
        var text = String(line.dropFirst(indent))
        if text.hasPrefix("//") || text.hasPrefix("///") { continue }
        if let started = open {
            open = (started.line, started.text + "\n" + text)
        } else if text.hasPrefix("@Suite") || text.hasPrefix("@Test") {
            open = (number, text)
        }
        if let attribute = open {
            guard let end = attributeEnd(attribute.text) else { continue }
            let traits = attribute.text[..<end]
            attributes.append((traits.hasPrefix("@Suite"), attribute.line, traits.contains(".timeLimit(")))
            open = nil
            text = String(attribute.text[end...].drop { $0 == " " })
        }
        let words = text.split(whereSeparator: { $0 == " " || $0 == "(" || $0 == "<" || $0 == ":" || $0 == "{" })
            .drop { modifiers.contains($0) }
        guard let keyword = words.first, let name = words.dropFirst().first.map(String.init) else { continue }
        switch keyword {
        case "struct", "class", "enum", "actor", "extension":
            types.removeAll { $0.indent >= indent }
            let suite = attributes.last { $0.isSuite }
            if let suite {
                if suite.limited { limited.insert(name) } else { problems.append("\(file):\(suite.line): @Suite \(name) has no .timeLimit") }
            }
            let covered = suite?.limited == true || (keyword == "extension" && limited.contains(name))
            types.append((indent, suite != nil || covered || types.last?.suite == true, covered || types.last?.limited == true))
            attributes = []
        case "func":
            types.removeAll { $0.indent >= indent }
            if let test = attributes.last(where: { !$0.isSuite }), !test.limited, types.last?.suite != true {
                problems.append("\(file):\(test.line): @Test \(name) has no .timeLimit, nor a @Suite around it")
            }
            attributes = []
        default:
            break
        }
    }
    return (problems, limited)
}

/// Every suite and test under Tests/ that runs with no time limit.
private func untimedTests() -> [String] {
    // First the suites with a limit, for the extensions of them in other files.
    let limited = testSources.reduce(into: Set<String>()) { $0.formUnion(untimed($1.text, file: $1.path, limited: []).limited) }
    return testSources.flatMap { untimed($0.text, file: $0.path, limited: limited).problems }
}

@Suite("time limits", .timeLimit(.minutes(6)))
struct TimeLimitTests {
    @Test("every @Suite has a .timeLimit, and every @Test outside one has its own")
    func everyTest() {
        #expect(testSources.count > 60)
        #expect(untimedTests() == [])
    }

    @Test("what is named: a suite without a limit, a test at the top level or in a type with no @Suite; a nested suite's test and an extension's are covered")
    func named() {
        let source = """
            import Testing

            @Suite("limited", .enabled(if: true),
                   .timeLimit(.minutes(3)))
            struct Limited {
                @Test("a (test)") func one() {}

                @Suite("nested")
                struct Nested {
                    @Test
                    func two() {}
                }
            }

            extension Limited {
                @Test("three") func three() {}
            }

            @Suite("unlimited") struct Unlimited {
                @Test("four", arguments: [1, 2])
                func four(value: Int) {}
                @Test("five", .timeLimit(.minutes(5))) func five() {}
            }

            struct Implied {
                /// @Test("a comment")
                @Test func six() {}
            }

            @Test("seven") func seven() {}
            @Test("eight", .timeLimit(.minutes(1))) func eight() {}
            """
        let limited = untimed(source, file: "T.swift", limited: []).limited
        #expect(limited == ["Limited"])
        #expect(untimed(source, file: "T.swift", limited: limited).problems == [
            "T.swift:8: @Suite Nested has no .timeLimit",
            "T.swift:19: @Suite Unlimited has no .timeLimit",
            "T.swift:27: @Test six has no .timeLimit, nor a @Suite around it",
            "T.swift:30: @Test seven has no .timeLimit, nor a @Suite around it",
        ])
    }
}
