@testable import MirrorModel
import Testing

@Suite("id order", .timeLimit(.minutes(6)))
struct IDOrderTests {
    @Test("integers of any length compare numerically; signs and leading zeros count")
    func integers() {
        #expect(IDOrder.compare("9", "10") == -1)
        #expect(IDOrder.compare("1234567890123456789012", "999") == 1)
        #expect(IDOrder.compare("007", "7") == 0)
        #expect(IDOrder.compare("-5", "3") == -1)
        #expect(IDOrder.compare("-50", "-6") == -1)
        #expect(IDOrder.compare("-0", "0") == 0)
        #expect(IDOrder.compare("abc", "abd") == -1)
        #expect(IDOrder.compare("9", "10a") == 1)
        #expect(IDOrder.collate("10a", "9") == 1)
    }
}
