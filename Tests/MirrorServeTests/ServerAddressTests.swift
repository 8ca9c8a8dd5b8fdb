@testable import MirrorServe
import Testing

@Suite("mirror serve's own host names", .timeLimit(.minutes(6)))
struct ServerAddressTests {
    @Test("a Host is put into answers' URLs only when it is a host name or address, in ASCII, with a port of 1 to 5 digits")
    func plainAuthorities() {
        for plain in ["localhost", "127.0.0.1", "api.example.com:8080", "a-b.c:1", "[::1]", "[::1]:65535", "[fe80::AbC1]:80",
                      "[::ffff:127.0.0.1]", "x:12345"] {
            #expect(ServerAddress.isPlainAuthority(plain), "\(plain)")
        }
        for other in ["", ":80", "host:", "host:123456", "host:8o", "ho st", "host/x", "h\u{e9}te", "ex\"ample",
                      "[]", "[::1", "[::1]x", "[::g]", "[\u{ff11}]", "user@host", "host:80:80", "[::1]:", "\u{ff11}"] {
            #expect(!ServerAddress.isPlainAuthority(other), "\(other)")
        }
    }
}
