extension String {
    /// The text with `& < > " '` written as character references: safe as an element's
    /// text or a quoted attribute's value in HTML (`&#39;`, not `&apos;`, which HTML 4 lacks).
    package var markupEscaped: String {
        var out = ""
        for character in self {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
