@testable import MirrorCore
import Testing

@Suite("JSON parsing")
struct JSONParsingTests {
    func parse(_ text: String) throws -> JSONDocument { try JSONDocument(parsing: Array(text.utf8)) }

    func failure(_ text: String) -> String? {
        do {
            _ = try JSONDocument(parsing: Array(text.utf8))
            return nil
        } catch {
            return "\(error.offset): \(error.message)"
        }
    }

    @Test("whitespace outside strings is dropped; everything else is kept byte for byte")
    func compaction() throws {
        let document = try parse("""
             { "a" : [ 1 , 2.50e+10 , -0.0 ] ,
               "b" : "x  y\\n" , "c":{ } , "d" : [ ] , "e" : true , "f" : null }\t
            """)
        #expect(String(decoding: document.bytes, as: UTF8.self)
            == #"{"a":[1,2.50e+10,-0.0],"b":"x  y\n","c":{},"d":[],"e":true,"f":null}"#)
        #expect(document.root["a"]?.elements.map(\.rawText) == ["1", "2.50e+10", "-0.0"])
        #expect(document.root["b"]?.stringValue == "x  y\n")
        #expect(document.root["c"]?.kind == .object && document.root["c"]?.count == 0)
        #expect(document.root["e"]?.boolValue == true)
        #expect(document.root["f"]?.kind == .null)
        #expect(document.root["f"]?.scalarText == nil)
    }

    @Test("big integers keep every digit")
    func bigNumbers() throws {
        let document = try parse(#"[1234567890123456789, 123456789012345678901234567890, 9007199254740993]"#)
        #expect(document.root.elements.map(\.scalarText) == ["1234567890123456789", "123456789012345678901234567890", "9007199254740993"])
        #expect(document.root.elements[0].intValue == 1234567890123456789)
        #expect(document.root.elements[1].intValue == nil)
    }

    @Test("escapes decode, surrogate pairs included; escaped keys match")
    func escapes() throws {
        let document = try parse(#"{"k\u00e9y":"\u6771\u4eac \ud83d\ude00 \"q\" \/ \t","plain":"Zürich"}"#)
        #expect(document.root["kéy"]?.stringValue == "東京 😀 \"q\" / \t")
        #expect(document.root["plain"]?.stringValue == "Zürich")
        #expect(document.root.members.map(\.key) == ["kéy", "plain"])
    }

    @Test("the last of duplicate keys wins")
    func duplicates() throws {
        #expect(try parse(#"{"a":1,"a":2}"#).root["a"]?.rawText == "2")
    }

    @Test("paths: keys, array indexes, wildcards and the root")
    func paths() throws {
        let document = try parse(#"{"data":{"list":[{"id":"1","img":[{"url":"u1"},{"url":"u2"}]},{"id":2,"img":[]}]}}"#)
        let root = document.root
        #expect(root.value(at: JSONPath("data.list")!)?.count == 2)
        #expect(root.value(at: JSONPath("data.list.1.id")!)?.scalarText == "2")
        #expect(root.values(at: JSONPath("data.list.*.img.*.url")!).map(\.stringValue) == ["u1", "u2"])
        #expect(root.value(at: JSONPath(".")!)?.kind == .object)
        #expect(root.value(at: JSONPath("data.missing")!) == nil)
        #expect(root.value(at: JSONPath("data.list.7")!) == nil)
        #expect(JSONPath("") == nil && JSONPath("a..b") == nil && JSONPath(".a") == nil && JSONPath("a.") == nil)
        let top = try parse(#" [ {"id":1} ] "#)
        #expect(top.root.value(at: JSONPath(".")!)?.elements.first?.rawText == #"{"id":1}"#)
    }

    @Test("each syntax error names what and where")
    func errors() {
        #expect(failure("") == "0: unexpected end of input")
        #expect(failure("<html>") == "0: unexpected character '<' at byte 0")
        #expect(failure(#"{"a":1,}"#) == "7: unexpected character '}' at byte 7")
        #expect(failure(#"{"a" 1}"#) == "5: unexpected character '1' at byte 5")
        #expect(failure(#"[1 2]"#) == "3: unexpected character '2' at byte 3")
        #expect(failure(#"{"a": [1, 2"#) == "11: unexpected end of input")
        #expect(failure(#"["a\qb"]"#) == #"3: invalid escape '\q' at byte 3"#)
        #expect(failure(#"["\u12G4"]"#) == #"2: invalid escape '\u' at byte 2"#)
        #expect(failure("[\"a\nb\"]") == "3: control character in string at byte 3")
        #expect(failure("[01]") == "2: unexpected character '1' at byte 2")
        #expect(failure("[1.]") == "3: unexpected character ']' at byte 3")
        #expect(failure("[-]") == "2: unexpected character ']' at byte 2")
        #expect(failure("[1e]") == "3: unexpected character ']' at byte 3")
        #expect(failure("[tru]") == "4: unexpected character ']' at byte 4")
        #expect(failure("{} {}") == "3: extra data after the JSON value at byte 3")
        #expect(failure(String(repeating: "[", count: 513) + String(repeating: "]", count: 513))
            == "512: nesting deeper than 512 levels")
        #expect(failure(String(repeating: "[", count: 512) + String(repeating: "]", count: 512)) == nil)
    }

    @Test("invalid UTF-8 inside strings is rejected")
    func invalidUTF8() {
        func check(_ bytes: [UInt8]) -> String? {
            do {
                _ = try JSONDocument(parsing: [0x22] + bytes + [0x22])
                return nil
            } catch {
                return error.message
            }
        }
        #expect(check([0xC3, 0xA9]) == nil)                       // é
        #expect(check([0xF0, 0x9F, 0x98, 0x80]) == nil)           // 😀
        #expect(check([0x61, 0xC3]) == "invalid UTF-8 at byte 2") // cut short
        #expect(check([0xC0, 0xAF]) == "invalid UTF-8 at byte 1") // overlong
        #expect(check([0xED, 0xA0, 0x80]) == "invalid UTF-8 at byte 1") // surrogate
        #expect(check([0xFF]) == "invalid UTF-8 at byte 1")
    }

    @Test("quoting escapes what JSON requires and nothing else")
    func quoting() {
        var out: [UInt8] = []
        JSONText.appendQuoted("a\"b\\c\nd\u{01}é", to: &out)
        #expect(String(decoding: out, as: UTF8.self) == #""a\"b\\c\nd\u0001é""#)
    }
}
