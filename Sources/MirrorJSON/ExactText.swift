/// Text that compares and hashes by its UTF-8 bytes. Swift's `String ==` holds canonically
/// equivalent strings equal (NFC and NFD `café`, `Å` and the Ångström sign); an API and
/// SQLite tell them apart, so ids, cursors and URLs are compared as this.

package struct ExactText: Hashable, Sendable, CustomStringConvertible {
    package let text: String

    package init(_ text: String) { self.text = text }

    package var description: String { text }

    package static func == (lhs: ExactText, rhs: ExactText) -> Bool {
        lhs.text.utf8.count == rhs.text.utf8.count && lhs.text.utf8.elementsEqual(rhs.text.utf8)
    }

    package func hash(into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
