extension String {
    /// The text with `& < > " '` written as character references: safe as an element's
    /// text or a quoted attribute's value in HTML (`&#39;`, not `&apos;`, which HTML 4 lacks)
    /// and in XML (serve's status page, the documents sent to S3).
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
