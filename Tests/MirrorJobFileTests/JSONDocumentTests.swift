@testable import MirrorJobFile
@testable import MirrorJSON
@testable import MirrorModel
import Testing

@Suite("JSON documents", .timeLimit(.minutes(6)))
struct JSONDocumentTests {
    func parse(_ text: String) throws -> JSONDocument { try JSONDocument(parsing: Array(text.utf8)) }

    func compacted(_ text: String) throws -> String {
        String(decoding: try parse(text).bytes, as: UTF8.self)
    }

    /// "OFFSET: MESSAGE" of the error parsing `bytes`, or nil if they parse.
    func failure(_ bytes: [UInt8]) -> String? {
        do {
            _ = try JSONDocument(parsing: bytes)
            return nil
        } catch {
            #expect(error.description == error.message)
            return "\(error.offset): \(error.message)"
        }
    }

    func failure(_ text: String) -> String? { failure(Array(text.utf8)) }

    func path(_ text: String) -> JSONPath { JSONPath(text)! }

    // MARK: Compaction

    @Test("a pretty-printed document compacts to exactly the bytes without its whitespace")
    func prettyPrinted() throws {
        let text = "\r\n\t{\n  \"data\" : {\n    \"list\" : [\n      { \"id\" : 1 , \"tags\" : [ \"a\" , \"b\" ] } ,\n"
            + "      { \"id\" : -2.5E-3 , \"ok\" : true , \"no\" : false , \"none\" : null }\n    ] ,\n"
            + "    \"empty\" : { } , \"nothing\" : [ ]\n  }\n}\n\n"
        let document = try parse(text)
        #expect(String(decoding: document.bytes, as: UTF8.self)
            == #"{"data":{"list":[{"id":1,"tags":["a","b"]},{"id":-2.5E-3,"ok":true,"no":false,"none":null}],"empty":{},"nothing":[]}}"#)
        let records = try #require(document.root.value(at: path("data.list"))).elements
        #expect(records.map(\.rawText) == [#"{"id":1,"tags":["a","b"]}"#,
                                           #"{"id":-2.5E-3,"ok":true,"no":false,"none":null}"#])
        #expect(records[1].byteRange == 43 ..< 90)
        #expect(Array(records[0].rawBytes) == Array(#"{"id":1,"tags":["a","b"]}"#.utf8))
    }

    @Test("whitespace inside strings is kept, escapes are kept as written")
    func stringsKeepTheirBytes() throws {
        #expect(try compacted(#"[ "  a  b  " , "\t\n" , " \u0020 " ]"#) == #"["  a  b  ","\t\n"," \u0020 "]"#)
        #expect(try parse(#"[ " a\tb " ]"#).root.elements.first?.stringValue == " a\tb ")
        #expect(try compacted(#"  "x  y"  "#) == #""x  y""#)
    }

    @Test("a compact document is kept byte for byte")
    func compactIsUnchanged() throws {
        let text = #"{"data":{"list":[{"id":"1234567890123456789","title":"Late Show \"live\"","city":"Zürich","date":"2026-11-22","price":12.5,"tags":["a","b"],"cover":{"url":"http://x/img/1.jpg"},"body":"café naïve 東京"}],"page":1,"total_pages":1000}}"#
        #expect(try compacted(text) == text)
    }

    @Test("empty containers, at the top and nested")
    func emptyContainers() throws {
        #expect(try compacted(" { } ") == "{}")
        #expect(try compacted(" [ ] ") == "[]")
        let document = try parse(#"{"o":{},"a":[],"n":[[],{}]}"#)
        let root = document.root
        #expect(root["o"]?.kind == .object && root["o"]?.count == 0 && root["o"]?.members.isEmpty == true)
        #expect(root["a"]?.kind == .array && root["a"]?.count == 0 && root["a"]?.elements.isEmpty == true)
        #expect(root["n"]?.elements.map(\.rawText) == ["[]", "{}"])
        #expect(root["n"]?.elements.map(\.kind) == [.array, .object])
        #expect(root.members.map(\.key) == ["o", "a", "n"])
        #expect(root.count == 3)
    }

    // MARK: Numbers

    @Test("big integers keep every digit; only integers that fit Int have intValue")
    func bigIntegers() throws {
        let document = try parse(
            "[1234567890123456789, 1234567890123456789012, 123456789012345678901234567890, -9223372036854775808, 9223372036854775807, 9223372036854775808, -0]")
        let elements = document.root.elements
        #expect(elements.map(\.scalarText) == ["1234567890123456789", "1234567890123456789012",
                                               "123456789012345678901234567890", "-9223372036854775808",
                                               "9223372036854775807", "9223372036854775808", "-0"])
        #expect(elements.map(\.intValue) == [1234567890123456789, nil, nil, Int.min, Int.max, nil, 0])
        #expect(String(decoding: document.bytes, as: UTF8.self)
            == "[1234567890123456789,1234567890123456789012,123456789012345678901234567890,-9223372036854775808,9223372036854775807,9223372036854775808,-0]")
    }

    @Test("fractions and exponents are kept as written and have no intValue")
    func fractions() throws {
        let document = try parse("[1.50e+10, 1.0, 1e3, 0.000, -0.5E-0, 2]")
        #expect(document.root.elements.map(\.rawText) == ["1.50e+10", "1.0", "1e3", "0.000", "-0.5E-0", "2"])
        #expect(document.root.elements.map(\.intValue) == [nil, nil, nil, nil, nil, 2])
        #expect(document.root.elements.allSatisfy { $0.kind == .number })
        #expect(try parse("1.50e+10").root.scalarText == "1.50e+10")
    }

    // MARK: Strings

    @Test("unicode text and \\u escapes, surrogate pairs included, decode")
    func unicode() throws {
        let document = try parse(#"["Zürich", "東京 😀", "\u00e9\u6771\u4EAC \ud83d\ude00", "\"q\" \\ \/ \b\f\n\r\t", "\u0000", "\ud800x", "\udc00"]"#)
        #expect(document.root.elements.map(\.stringValue)
            == ["Zürich", "東京 😀", "é東京 😀", "\"q\" \\ / \u{08}\u{0C}\n\r\t", "\u{00}", "\u{FFFD}x", "\u{FFFD}"])
        #expect(document.root.elements[2].rawText == #""\u00e9\u6771\u4EAC \ud83d\ude00""#)
        #expect(document.root.elements[0].scalarText == "Zürich")
    }

    @Test("keys match by their unescaped text")
    func escapedKeys() throws {
        let document = try parse(#"{"k\u00e9y":1,"a\"b":2,"tab\t":3,"plain":4,"":5}"#)
        let root = document.root
        #expect(root["kéy"]?.intValue == 1)
        #expect(root["a\"b"]?.intValue == 2)
        #expect(root["tab\t"]?.intValue == 3)
        #expect(root["plain"]?.intValue == 4)
        #expect(root[""]?.intValue == 5)
        #expect(root["k\\u00e9y"] == nil)
        #expect(root.members.map(\.key) == ["kéy", "a\"b", "tab\t", "plain", ""])
        #expect(root.value(at: path("kéy"))?.rawText == "1")
    }

    @Test("the first of duplicate keys counts, as in SQLite; members keeps them all")
    func duplicateKeys() throws {
        let document = try parse(#"{"a":1,"b":{"c":true},"a":[2],"\u0061":"3"}"#)
        #expect(document.root["a"]?.rawText == "1")
        #expect(document.root.value(at: path("a"))?.rawText == "1")
        #expect(document.root.members.map(\.key) == ["a", "b", "a", "a"])
        #expect(document.root.members.map(\.value.rawText) == ["1", #"{"c":true}"#, "[2]", #""3""#])
        #expect(document.root.count == 4)
    }

    @Test("strings of every length with special bytes at every position round-trip")
    func stringPositions() throws {
        // Crosses the 8-byte steps of the string scanner at every offset.
        let specials = ["\"", "\\", "\n", "\u{01}", "é", "東", "😀", "/"]
        for length in 0 ..< 20 {
            for special in specials {
                for position in 0 ... length {
                    var text = String(repeating: "a", count: length)
                    text.insert(contentsOf: special, at: text.index(text.startIndex, offsetBy: position))
                    var json: [UInt8] = []
                    JSONText.appendQuoted(text, to: &json)
                    let document = try JSONDocument(parsing: json)
                    #expect(document.root.stringValue == text)
                    #expect(document.bytes == json)
                }
            }
        }
    }

    // MARK: Scalars

    @Test("scalarText, boolValue and kinds of every scalar")
    func scalars() throws {
        let document = try parse(#"{"s":"x","n":-1,"t":true,"f":false,"z":null,"o":{},"a":[]}"#)
        let root = document.root
        #expect(["s", "n", "t", "f", "z", "o", "a"].map { root[$0]?.kind }
            == [.string, .number, .bool, .bool, .null, .object, .array])
        #expect(["s", "n", "t", "f", "z", "o", "a"].map { root[$0]?.scalarText } == ["x", "-1", "true", "false", nil, nil, nil])
        #expect(["s", "t", "f", "z"].map { root[$0]?.boolValue } == [nil, true, false, nil])
        #expect(root["n"]?.stringValue == nil && root["s"]?.intValue == nil)
        #expect(root["s"]?.elements.isEmpty == true && root["s"]?.members.isEmpty == true && root["s"]?.count == 0)
        #expect(root["a"]?["x"] == nil && root["s"]?["x"] == nil)
        #expect(try parse("null").root.kind == .null)
        #expect(try parse(" true ").root.boolValue == true)
    }

    // MARK: Paths

    @Test("path text: keys, wildcards, the root, and what is not a path")
    func pathText() {
        #expect(path("data.list").segments == [.key("data"), .key("list")])
        #expect(path("images.*.url").segments == [.key("images"), .wildcard, .key("url")])
        #expect(path(".").segments == [])
        #expect(path("user.id").description == "user.id")
        #expect(path(".").description == ".")
        #expect(JSONPath("") == nil && JSONPath("a..b") == nil && JSONPath(".a") == nil
            && JSONPath("a.") == nil && JSONPath("..") == nil)
        #expect(JSONPath("data.list") == JSONPath("data.list"))
    }

    @Test("a dot path's filter on an object reads it as an array of one: XML's lone <link> is found as two are")
    func filterOnObject() throws {
        let one = try parse(#"{"feed":{"link":{"@rel":"next","@href":"/feed?after=3"}}}"#).root
        #expect(one.value(at: path("feed.link[@rel=next].@href"))?.stringValue == "/feed?after=3")
        #expect(one.value(at: path("feed.link[@rel=self].@href")) == nil)
        #expect(one.value(at: path("feed[@rel=next]")) == nil)
        // A pointer's `[…]` segment on an object is still the member of that name.
        #expect(one.value(at: path("/feed/link/[@rel=next]/@href")) == nil)
        let two = try parse(#"{"feed":{"link":[{"@rel":"self","@href":"/feed"},{"@rel":"next","@href":"/feed?after=2"}]}}"#).root
        #expect(two.value(at: path("feed.link[@rel=next].@href"))?.stringValue == "/feed?after=2")
    }

    @Test("filters pick array elements by a member: in dot paths, alone, quoted, and as a pointer segment")
    func filters() throws {
        let document = try parse(#"""
            {"links":[{"rel":"self","href":"s"},{"rel":"next","href":"n"},{"rel":"next.page","href":"d"},{"rel":2,"href":"two"}],
             "obj":{"[rel=next]":"key"},
             "list":[{"rel":"next","href":"first"},{"rel":"next","href":"second"}]}
            """#)
        let root = document.root
        #expect(path("links[rel=next].href").segments
            == [.key("links"), .filter(.init(key: "rel", value: "next", orKey: nil)), .key("href")])
        #expect(root.value(at: path("links[rel=next].href"))?.stringValue == "n")
        #expect(root.value(at: path("links[rel=self].href"))?.stringValue == "s")
        #expect(root.value(at: path("links[rel='next.page'].href"))?.stringValue == "d")
        #expect(root.value(at: path(#"links[rel="next.page"].href"#))?.stringValue == "d")
        #expect(root.value(at: path("links[rel=2].href"))?.stringValue == "two")
        #expect(root.value(at: path("links[rel=prev].href")) == nil)
        #expect(root.values(at: path("list[rel=next].href")).compactMap(\.stringValue) == ["first", "second"])
        #expect(root.value(at: path("/links/[rel=next]/href"))?.stringValue == "n")
        #expect(root.value(at: path("/obj/[rel=next]"))?.stringValue == "key")
        #expect(root.value(at: path("obj[rel=next]")) == nil)
        let top = try parse(#"[{"rel":"a","v":1},{"rel":"b","v":2}]"#)
        #expect(top.root.value(at: path("[rel=b].v"))?.intValue == 2)
        #expect(JSONPath("links[rel]") == nil && JSONPath("links[=x]") == nil && JSONPath("links[rel=next") == nil
            && JSONPath("links[rel=next]x") == nil && JSONPath("links[rel='next]") == nil && JSONPath("[]") == nil)
    }

    @Test("a top-level array is the records at path '.'")
    func topLevelArray() throws {
        let document = try parse(#" [ {"id":1} , {"id":"2"} ] "#)
        let records = try #require(document.root.value(at: path(".")))
        #expect(records.kind == .array)
        #expect(records.elements.map(\.rawText) == [#"{"id":1}"#, #"{"id":"2"}"#])
        #expect(records.elements.map { $0.value(at: path("id"))?.scalarText } == ["1", "2"])
        #expect(document.root.values(at: path(".")).count == 1)
    }

    @Test("key paths and array indexes")
    func keyPaths() throws {
        let document = try parse(#"{"data":{"list":[{"id":"a","user":{"id":7}},{"id":"b"}],"0":"zero"}}"#)
        let root = document.root
        #expect(root.value(at: path("data.list.0.user.id"))?.intValue == 7)
        #expect(root.value(at: path("data.list.1.id"))?.stringValue == "b")
        #expect(root.value(at: path("data.list.2")) == nil)
        #expect(root.value(at: path("data.list.-1.id"))?.stringValue == "b")
        #expect(root.value(at: path("data.list.-2.id"))?.stringValue == "a")
        #expect(root.value(at: path("data.list.-3")) == nil)
        #expect(root.value(at: path("data.list.x")) == nil)
        #expect(root.value(at: path("data.0"))?.stringValue == "zero")
        #expect(root.value(at: path("data.missing")) == nil)
        #expect(root.value(at: path("data.list.0.id.deeper")) == nil)
        #expect(root.values(at: path("data.list.1.id")).map(\.rawText) == [#""b""#])
        #expect(root.values(at: path("data.nothing")).isEmpty)
        let second = try #require(root.value(at: path("data.list.1")))
        #expect(second.value(at: path("id"))?.scalarText == "b")
    }

    @Test("JSON Pointers name any key: dots, slashes, @, spaces, ~; and index arrays as dot paths do")
    func pointers() throws {
        let document = try parse(#"{"@odata.nextLink":"n","a/b":{"c~d":1,"e f":[10,20]},"":{"x":2}}"#)
        let root = document.root
        #expect(root.value(at: path("/@odata.nextLink"))?.stringValue == "n")
        #expect(root.value(at: path("/a~1b/c~0d"))?.intValue == 1)
        #expect(root.value(at: path("/a~1b/e f/1"))?.intValue == 20)
        #expect(root.value(at: path("/a~1b/e f/-1"))?.intValue == 20)
        #expect(root.values(at: path("/a~1b/e f/*")).isEmpty)
        #expect(root.values(at: path("a/b.e f.*")).map(\.rawText) == ["10", "20"])
        #expect(root.value(at: path("//x"))?.intValue == 2)
        #expect(root.value(at: path("@odata.nextLink")) == nil)
        #expect(JSONPath("/a~2b") == nil && JSONPath("/a~") == nil)
        #expect(JSONPath("/a/b")?.segments == [.key("a"), .key("b")])
    }

    @Test("wildcards visit array elements and object member values in order")
    func wildcards() throws {
        let document = try parse(#"""
            {"list":[{"id":1,"images":[{"url":"u1"},{"url":"u2"}]},{"id":2,"images":[]},{"id":3,"images":[{"url":"u3"},{"alt":"x"}]}],
             "map":{"a":{"url":"m1"},"b":{"url":"m2"},"c":5}}
            """#)
        let root = document.root
        #expect(root.values(at: path("list.*.images.*.url")).map(\.stringValue) == ["u1", "u2", "u3"])
        #expect(root.value(at: path("list.*.images.*.url"))?.stringValue == "u1")
        #expect(root.values(at: path("list.*.id")).map(\.rawText) == ["1", "2", "3"])
        #expect(root.values(at: path("map.*.url")).map(\.stringValue) == ["m1", "m2"])
        #expect(root.values(at: path("map.*")).map(\.rawText) == [#"{"url":"m1"}"#, #"{"url":"m2"}"#, "5"])
        #expect(root.values(at: path("list.*.nothing")).isEmpty)
        #expect(root.value(at: path("list.*.nothing")) == nil)
        #expect(root.values(at: path("list.0.id.*")).isEmpty)
    }

    @Test("a page of records: each record's raw bytes and id")
    func page() throws {
        var text = #"{"data":{"list":["#
        for index in 0 ..< 100 {
            if index > 0 { text += ",\n " }
            text += #"{ "id" : "\#(9_007_199_254_740_993_000 + index)", "n" : \#(index), "body" : "a  b" }"#
        }
        text += #"],"page":1}}"#
        let document = try parse(text)
        let records = try #require(document.root.value(at: path("data.list"))).elements
        #expect(records.count == 100)
        #expect(records.map { $0.value(at: path("id"))?.scalarText } == (0 ..< 100).map { "\(9_007_199_254_740_993_000 + $0)" })
        #expect(records[99].rawText == #"{"id":"9007199254740993099","n":99,"body":"a  b"}"#)
        #expect(document.root.value(at: path("data.page"))?.intValue == 1)
    }

    // MARK: Folding and compacting in place

    @Test("a document compacted in place is the one parsed into a copy, whatever the whitespace before each string")
    func inPlace() throws {
        // Whitespace puts the compacted text 0 to 9 bytes behind the input, across the
        // 8-byte steps of the string scanner, with special bytes at every position.
        let specials = ["\"", "\\", "\n", "é", "😀"]
        for gap in 0 ..< 10 {
            for special in specials {
                for position in 0 ... 12 {
                    var text = String(repeating: "a", count: 12)
                    text.insert(contentsOf: special, at: text.index(text.startIndex, offsetBy: position))
                    var value: [UInt8] = []
                    JSONText.appendQuoted(text, to: &value)
                    let pad = [UInt8](repeating: 0x20, count: gap)
                    let json = Array("{".utf8) + pad + value + pad + Array(":".utf8) + pad + value + pad + Array(",\"k\":[".utf8)
                        + pad + value + pad + Array("]}".utf8)
                    let copied = try JSONDocument(parsing: json)
                    let inPlace = try JSONDocument(compacting: json)
                    #expect(inPlace.bytes == copied.bytes)
                    #expect(inPlace.root[text]?.stringValue == text)
                    #expect(inPlace.root["k"]?.elements.map(\.stringValue) == [text])
                }
            }
        }
        #expect(throws: JSONSyntaxError(offset: 10, message: "unexpected character '}' at byte 10")) {
            try JSONDocument(compacting: Array(#"{ "a" : 1,}"#.utf8))
        }
    }

    @Test("folded containers answer paths, elements, members and counts as unfolded ones, and keep one node each")
    func folding() throws {
        let text = #"""
            {"data":{"list":[{"id":"a\"1","tags":["x","y"],"n":{"m":1}},{"id":2,"tags":[]},7,[{"id":3}]],"total":3},
             "meta":{"next":"c2","pages":[1,2]},"top":[{"a":1},{"a":2}]}
            """#
        let plain = try parse(text)
        let paths = ["data.list", "data.list.0.id", "data.list.*.id", "data.list.0.tags.*", "data.list.0.n.m", "data.list.3.0.id",
                     "data.total", "meta.next", "meta.pages.1", "top.*.a", "data.list.*.tags", "missing", "."]
        for depth in 1 ... 5 {
            let folded = try JSONDocument(compacting: Array(text.utf8), foldingAt: depth)
            #expect(folded.bytes == plain.bytes)
            for path in paths.map(path) {
                #expect(folded.root.values(at: path).map(\.rawText) == plain.root.values(at: path).map(\.rawText), "\(path) at \(depth)")
                #expect(folded.root.values(at: path).map(\.kind) == plain.root.values(at: path).map(\.kind))
                #expect(folded.root.values(at: path).map(\.count) == plain.root.values(at: path).map(\.count))
            }
            #expect(folded.root.value(at: path("data.list.0.id"))?.stringValue == "a\"1")
            #expect(folded.root.value(at: path("data.list"))?.elements.map(\.rawText)
                    == plain.root.value(at: path("data.list"))?.elements.map(\.rawText))
            #expect(folded.root.value(at: path("meta"))?.members.map(\.key) == ["next", "pages"])
            #expect(folded.root["meta"]?["next"]?.stringValue == "c2")
        }
        // An index into a folded array parses that one element, not the array.
        let records = try JSONDocument(compacting: Array(#"{"data":[{"id":1},{"id":2,"x":[3]},{"id":3}]}"#.utf8), foldingAt: 2)
        #expect(records.root.value(at: path("data.-1"))?.document.bytes == Array(#"{"id":3}"#.utf8))
        #expect(records.root.value(at: path("data.1.x.0"))?.intValue == 3)
        #expect(records.root.value(at: path("data.-4")) == nil && records.root.value(at: path("data.3")) == nil)
        #expect(records.root.value(at: path("data.-0")) == nil)
        // Folded at 2, `data`, `meta` and `top` are one node each: the root, three keys, three values.
        #expect(try JSONDocument(compacting: Array(text.utf8), foldingAt: 2).nodes.count == 7)
        #expect(plain.nodes.count == 44)
    }

    @Test("an array's elements are found in its compacted text, brackets, commas and quotes inside strings included")
    func elementRanges() throws {
        let text = #"[{"a":"],[{"},"x\"]\\",[1,[2,{}]],{"b":[","]},-1.5e3,null,[]]"#
        let document = try parse(text)
        var found: [String] = []
        document.bytes.withUnsafeBufferPointer { bytes in
            JSONText.forEachElement(of: bytes) { found.append(String(decoding: bytes[$0], as: UTF8.self)); return true }
        }
        #expect(found == [#"{"a":"],[{"}"#, #""x\"]\\""#, "[1,[2,{}]]", #"{"b":[","]}"#, "-1.5e3", "null", "[]"])
        // Strings of every length with a quote, a backslash or a bracket at every position:
        // the element scanner skips string content eight bytes at a time.
        for length in 0 ..< 20 {
            for special in ["\"", "\\", "]", ",", "é"] {
                for position in 0 ... length {
                    var text = String(repeating: "a", count: length)
                    text.insert(contentsOf: special, at: text.index(text.startIndex, offsetBy: position))
                    var json: [UInt8] = Array("[".utf8)
                    JSONText.appendQuoted(text, to: &json)
                    json += Array(#",{"k":"#.utf8)
                    JSONText.appendQuoted(text, to: &json)
                    json += Array("},1]".utf8)
                    let document = try JSONDocument(parsing: json)
                    var ranges: [String] = []
                    document.bytes.withUnsafeBufferPointer { bytes in
                        JSONText.forEachElement(of: bytes) { ranges.append(String(decoding: bytes[$0], as: UTF8.self)); return true }
                    }
                    #expect(ranges == document.root.elements.map(\.rawText))
                }
            }
        }
        found = []
        try parse("[ ]").bytes.withUnsafeBufferPointer { bytes in
            JSONText.forEachElement(of: bytes) { found.append(String(decoding: bytes[$0], as: UTF8.self)); return true }
        }
        #expect(found.isEmpty)
    }

    @Test("a member of a compacted object is found in its text: the first of duplicates; an escaped key before it makes it unsure")
    func memberScan() throws {
        func find(_ key: String, _ json: String) throws -> String {
            let document = try parse(json)
            return document.bytes.withUnsafeBufferPointer { object in
                Array(key.utf8).withUnsafeBufferPointer { key in
                    switch JSONText.member(key, in: object) {
                    case let .value(range): return String(decoding: object[range], as: UTF8.self)
                    case .missing: return "missing"
                    case .unsure: return "unsure"
                    }
                }
            }
        }
        #expect(try find("id", #"{"a":{"id":9,"b":[1,{"c":"}"}]},"s":"x\",\"id\":1","id":"7","id":8}"#) == #""7""#)
        #expect(try find("id", #"{ "n" : [ ] , "id" : -12.5e3 }"#) == "-12.5e3")
        #expect(try find("id", #"{"idx":1,"i":2}"#) == "missing")
        #expect(try find("id", "{}") == "missing")
        #expect(try find("id", #"{"i\u0064":1,"id":2}"#) == "unsure")
        #expect(try find("id", #"{"id":{"x":[1,2]},"z":1}"#) == #"{"x":[1,2]}"#)
    }

    // MARK: Errors

    @Test("each syntax error names what and where, with the offset in the input")
    func errors() {
        #expect(failure("") == "0: unexpected end of input")
        #expect(failure(" \n ") == "3: unexpected end of input")
        #expect(failure("<html>") == "0: unexpected character '<' at byte 0")
        #expect(failure([0xEF, 0xBB, 0xBF, 0x7B, 0x7D]) == "0: unexpected byte 0xEF at byte 0")
        #expect(failure(#"{"a":1,}"#) == "7: unexpected character '}' at byte 7")
        #expect(failure(#"{"a" 1}"#) == "5: unexpected character '1' at byte 5")
        #expect(failure(#"{1:2}"#) == "1: unexpected character '1' at byte 1")
        #expect(failure(#"{"a":1 "b":2}"#) == #"7: unexpected character '"' at byte 7"#)
        #expect(failure(#"{"a":1]"#) == "6: unexpected character ']' at byte 6")
        #expect(failure("[1,2}") == "4: unexpected character '}' at byte 4")
        #expect(failure("[1 2]") == "3: unexpected character '2' at byte 3")
        #expect(failure("[1,]") == "3: unexpected character ']' at byte 3")
        #expect(failure(#"{"a": [1, 2"#) == "11: unexpected end of input")
        #expect(failure(#"{"a""#) == "4: unexpected end of input")
        #expect(failure(#"["abc"#) == "5: unexpected end of input")
        #expect(failure(#"["abcdefghijklmnop"#) == "18: unexpected end of input")
        #expect(failure(#"{"name": "abcdefg\q"}"#) == #"17: invalid escape '\q' at byte 17"#)
        #expect(failure(#"["\u12G4"]"#) == #"2: invalid escape '\u' at byte 2"#)
        #expect(failure("[\"\\\n\"]") == "2: invalid escape at byte 2")
        #expect(failure(#"["\u12"#) == "6: unexpected end of input")
        #expect(failure(#""\"#) == "2: unexpected end of input")
        #expect(failure("[\"a\nb\"]") == "3: control character in string at byte 3")
        #expect(failure("\"a\tb\"") == "2: control character in string at byte 2")
        #expect(failure([0x7B, 0x22, 0x63, 0x69, 0x74, 0x79, 0x22, 0x3A, 0x22, 0xC3, 0x28, 0x22, 0x7D])
            == "9: invalid UTF-8 at byte 9")
        #expect(failure(#"{"a":[1,22]}x"#) == "12: extra data after the JSON value at byte 12")
        #expect(failure("{} {}") == "3: extra data after the JSON value at byte 3")
        #expect(failure("01") == "1: extra data after the JSON value at byte 1")
    }

    @Test("numbers and literals follow the grammar exactly")
    func grammar() {
        #expect(failure("[01]") == "2: unexpected character '1' at byte 2")
        #expect(failure("[1.]") == "3: unexpected character ']' at byte 3")
        #expect(failure("[.5]") == "1: unexpected character '.' at byte 1")
        #expect(failure("[+1]") == "1: unexpected character '+' at byte 1")
        #expect(failure("[-]") == "2: unexpected character ']' at byte 2")
        #expect(failure("[-a]") == "2: unexpected character 'a' at byte 2")
        #expect(failure("[1e]") == "3: unexpected character ']' at byte 3")
        #expect(failure("[1.5e+]") == "6: unexpected character ']' at byte 6")
        #expect(failure("-") == "1: unexpected end of input")
        #expect(failure("1.") == "2: unexpected end of input")
        #expect(failure("1e+") == "3: unexpected end of input")
        #expect(failure("[tru]") == "4: unexpected character ']' at byte 4")
        #expect(failure("[True]") == "1: unexpected character 'T' at byte 1")
        #expect(failure("[falsy]") == "5: unexpected character 'y' at byte 5")
        #expect(failure("nul") == "3: unexpected end of input")
        #expect(failure("[nan]") == "2: unexpected character 'a' at byte 2")
        #expect(failure("-0") == nil && failure("0e0") == nil && failure("1E+2") == nil && failure("false") == nil)
    }

    @Test("invalid UTF-8 inside strings is rejected at the offending lead byte")
    func invalidUTF8() {
        func check(_ content: [UInt8]) -> String? { failure([0x22] + content + [0x22]) }
        #expect(check([0xC3, 0xA9]) == nil)                                 // é
        #expect(check([0xE6, 0x9D, 0xB1]) == nil)                           // 東
        #expect(check([0xF0, 0x9F, 0x98, 0x80]) == nil)                     // 😀
        #expect(check([0xF4, 0x8F, 0xBF, 0xBF]) == nil)                     // U+10FFFF
        #expect(check([0xEF, 0xBF, 0xBF]) == nil)                           // U+FFFF
        #expect(check([0x61, 0xC3]) == "2: invalid UTF-8 at byte 2")        // cut short by the quote
        #expect(check([0xC0, 0xAF]) == "1: invalid UTF-8 at byte 1")        // overlong 2-byte
        #expect(check([0xE0, 0x80, 0xAF]) == "1: invalid UTF-8 at byte 1")  // overlong 3-byte
        #expect(check([0xF0, 0x80, 0x80, 0xAF]) == "1: invalid UTF-8 at byte 1") // overlong 4-byte
        #expect(check([0xED, 0xA0, 0x80]) == "1: invalid UTF-8 at byte 1")  // surrogate
        #expect(check([0xF4, 0x90, 0x80, 0x80]) == "1: invalid UTF-8 at byte 1") // above U+10FFFF
        #expect(check([0x80]) == "1: invalid UTF-8 at byte 1")              // stray continuation
        #expect(check([0xFF]) == "1: invalid UTF-8 at byte 1")
        #expect(check([0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0xE6, 0x9D, 0x41])
            == "9: invalid UTF-8 at byte 9")                                // bad third byte
        #expect(failure([0x22, 0x61, 0xE6, 0x9D]) == "2: invalid UTF-8 at byte 2") // input ends inside
    }

    @Test("nesting: 512 levels parse, 513 do not")
    func depth() throws {
        #expect(failure(String(repeating: "[", count: 512) + String(repeating: "]", count: 512)) == nil)
        #expect(failure(String(repeating: "[", count: 513) + String(repeating: "]", count: 513))
            == "512: nesting deeper than 512 levels")
        #expect(failure(String(repeating: #"{"a":"#, count: 513) + "1" + String(repeating: "}", count: 513))
            == "2560: nesting deeper than 512 levels")
        let deep = try parse(String(repeating: "[", count: 512) + "7" + String(repeating: "]", count: 512))
        #expect(deep.root.value(at: path(Array(repeating: "0", count: 511).joined(separator: ".")))?.rawText == "[7]")
    }

    @Test("an unsafe buffer parses like an array, and an empty one is the end of input")
    func unsafeBuffer() throws {
        let bytes = Array(#" {"a" : [1, 2]} "#.utf8)
        let document = try bytes.withUnsafeBytes { try JSONDocument(parsing: $0) }
        #expect(document.bytes == Array(#"{"a":[1,2]}"#.utf8))
        #expect(throws: JSONSyntaxError(offset: 0, message: "unexpected end of input")) {
            try JSONDocument(parsing: UnsafeRawBufferPointer(start: nil, count: 0))
        }
    }

    // MARK: Writing

    @Test("quoting escapes what JSON requires and nothing else")
    func quoting() throws {
        var out: [UInt8] = []
        JSONText.appendQuoted("a\"b\\c\nd\r\t\u{08}\u{0C}\u{01}\u{1F}é/😀", to: &out)
        #expect(String(decoding: out, as: UTF8.self) == #""a\"b\\c\nd\r\t\b\f\u0001\u001fé/😀""#)
        #expect(try JSONDocument(parsing: out).root.stringValue == "a\"b\\c\nd\r\t\u{08}\u{0C}\u{01}\u{1F}é/😀")
        out = [0x5B]
        JSONText.appendQuoted("", to: &out)
        #expect(out == Array(#"["""#.utf8))
    }
}
