package import MirrorJSON
package import MirrorModel

/// GraphQL's `errors` as a page's failure names them, and `mirror init` alike.
package enum GraphQLErrors {
    /// The first error's message (or the error itself, when it has none), on one line,
    /// secrets masked, and how many more there are.
    package static func said(_ errors: [JSONValue], redactor: Redactor) -> String {
        let first = errors[0]["message"]?.stringValue ?? errors[0].rawText
        let said = PageReader.errorText(Array(first.utf8), redactor: redactor) ?? "(no message)"
        return said + (errors.count > 1 ? " (and \(errors.count - 1) more)" : "")
    }
}
