@testable import MirrorModel
import Testing

@Suite("a page request's path and pairs", .timeLimit(.minutes(6)))
struct PageRequestTests {
    @Test("plain paths and pairs are kept as they are; %-escapes and + are decoded, %2F kept apart from /")
    func decoding() {
        let plain = PageRequest(url: "https://api.example.com/v1/items?page=2&size=100&flag")
        #expect(plain.path == "/v1/items")
        #expect(plain.pairs.map { [$0.name, $0.value] } == [["page", "2"], ["size", "100"], ["flag", ""]])
        #expect(PageRequest(url: "https://api.example.com").path == "/")
        #expect(PageRequest(url: "https://api.example.com?page=1").path == "/")

        let escaped = PageRequest(url: "/v1/a%20b/%C3%A9t%C3%A9?q=x+y&name=%41%2B&sort=-d%2Cb")
        #expect(escaped.path == "/v1/a b/été")
        #expect(escaped.pairs.map { [$0.name, $0.value] } == [["q", "x y"], ["name", "A+"], ["sort", "-d,b"]])
        #expect(PageRequest(url: "/a%2Fb").path == "/a%2Fb")
        #expect(PageRequest(url: "/a%2fb/c%20d").path == "/a%2Fb/c d")
        // A malformed escape is kept as it came.
        #expect(PageRequest(url: "/a%zz?x=%zz+1").path == "/a%zz")
        #expect(PageRequest(url: "/a%zz?x=%zz+1").pairs.map(\.value) == ["%zz 1"])
    }
}
