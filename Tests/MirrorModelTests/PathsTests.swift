@testable import MirrorModel
import Testing

@Suite("paths", .timeLimit(.minutes(6)))
struct PathsTests {
    @Test("the folder part of a path, one-letter names and trailing slashes included")
    func parent() {
        let cases = ["o": "", "o/": "", "/o": "/", "a/b": "a", "a/b/": "a", "a//b": "a", "/": "/", "": "", "./o": ".",
                     "o/t.sqlite": "o", "/x/y/z.db": "/x/y"]
        for (path, parent) in cases {
            #expect(Paths.parent(of: path) == parent, "\(path)")
        }
    }
}
