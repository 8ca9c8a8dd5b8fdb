@testable import MirrorWalk
import Testing

/// The XML reader and its mapping to JSON, from bytes.
@Suite("XML tree", .timeLimit(.minutes(6)))
struct XMLTreeTests {
    /// `xml` as the JSON text its mapping gives, or the reader's message.
    func json(_ xml: String, records: [String] = []) -> String {
        do {
            return String(decoding: try XMLTree(Array(xml.utf8)).json(records: records), as: UTF8.self)
        } catch {
            return error.message
        }
    }

    @Test("the five entities, decimal and hex character references, CDATA as it is, line ends as \\n")
    func entities() {
        #expect(json("<a>&lt;&gt;&amp;&quot;&apos; &#233;&#x2603;&#X41;</a>") == #"XML line 1, column 44: '&#X41;' is not a character reference XML allows"#)
        #expect(json("<a>&lt;&gt;&amp;&quot;&apos; &#233;&#x2603;&#65;</a>") == #"{"a":"<>&\"' é☃A"}"#)
        #expect(json("<a><![CDATA[<b>&amp;</b> ]]>x\r\ny</a>") == #"{"a":"<b>&amp;</b> x\ny"}"#)
        #expect(json("<a t=\"1&#10;2\ta\nb&amp;\" u='say \"hi\"'/>") == #"{"a":{"@t":"1\n2 a b&","@u":"say \"hi\""}}"#)
        #expect(json("<a>&nbsp;</a>") == "XML line 1, column 4: entity '&nbsp;' is not defined: only &lt; &gt; &amp; &quot; &apos; and character references are read")
        #expect(json("<a>&#0;</a>") == "XML line 1, column 4: '&#0;' is not a character reference XML allows")
        #expect(json("<a>\n fish & chips</a>") == "XML line 2, column 7: '&' starts no reference ending in ';' (write '&amp;' for '&')")
    }

    @Test("mapping: attributes as @name, repeated names as arrays, text alone a string, mixed text under #text")
    func mapping() {
        let feed = """
            <?xml version="1.0" encoding="utf-8"?>
            <!-- skipped -->
            <feed xmlns:atom="http://www.w3.org/2005/Atom">
              <?skipped too?>
              <atom:link rel="self" href="/a"/>
              <entry><id>1</id><tag>x</tag><tag>y</tag><empty/><p lang="en">a <b>bold</b> word</p></entry>
            </feed>
            """
        #expect(json(feed) == #"{"feed":{"@xmlns:atom":"http://www.w3.org/2005/Atom","atom:link":{"@rel":"self","@href":"/a"},"#
            + ##""entry":{"id":"1","tag":["x","y"],"empty":"","p":{"@lang":"en","b":"bold","#text":"a  word"}}}}"##)
        // Along the records path every element is an object and the last an array.
        #expect(json(feed, records: ["feed", "entry"]).contains(#""entry":[{"id":"1","tag":["x","y"]"#))
        #expect(json("<feed><title> t </title></feed>", records: ["feed", "entry"]) == #"{"feed":{"title":" t ","entry":[]}}"#)
        #expect(json("<feed/>", records: ["feed", "entry"]) == #"{"feed":{"entry":[]}}"#)
        #expect(json("<r><a><b>1</b></a></r>", records: ["r", "a", "b"]) == #"{"r":{"a":{"b":["1"]}}}"#)
        #expect(json("<other/>", records: ["feed", "entry"]) == #"{"other":""}"#)
    }

    @Test("a DOCTYPE is refused before any entity is declared; malformed XML names its line and column")
    func refusals() {
        let laughs = "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n <!ENTITY lol \"lol\">\n <!ENTITY lol2 \"&lol;&lol;\">\n]>\n<lolz>&lol2;</lolz>"
        #expect(json(laughs) == "XML with a DOCTYPE is not read: entities are never expanded")
        #expect(json("<feed>\n  <entry>\n    <id>1</id>\n  </entri>\n</feed>")
            == "XML line 4, column 3: end tag </entri> does not match <entry> (opened at line 2, column 3)")
        #expect(json("<feed>\n  <entry>\n") == "XML line 3, column 1: the body ends inside <entry> (opened at line 2, column 3)")
        #expect(json("<a></a><b/>") == "XML line 1, column 8: a second root element")
        #expect(json("<a x=1/>") == "XML line 1, column 6: attribute 'x' of <a> has no quoted value")
        #expect(json("<a x='1' x='2'/>") == "XML line 1, column 10: attribute 'x' appears twice in <a>")
        #expect(json("<a><!-- open </a>") == "XML line 1, column 4: comment is never closed")
        #expect(json("oops") == "XML line 1, column 1: text outside the root element")
        #expect(json("") == "XML line 1, column 1: no root element")
    }

    @Test("elements nest at most 256 deep")
    func depth() {
        let deep = String(repeating: "<a>", count: 256) + String(repeating: "</a>", count: 256)
        #expect(json(deep).hasPrefix(#"{"a":{"a":"#))
        let deeper = String(repeating: "<a>", count: 10_000)
        #expect(json(deeper) == "XML line 1, column 769: elements nest deeper than 256")
    }
}
