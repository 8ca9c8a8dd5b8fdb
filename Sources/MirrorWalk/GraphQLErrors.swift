package import MirrorJSON
package import MirrorModel

/// GraphQL's `errors` as a page's failure names them, for `mirror init` to say them alike.
package enum GraphQLErrors {
    /// The first error's message (or the error itself, when it has none), on one line,
    /// secrets masked, and how many more there are.
    package static func said(_ errors: [JSONValue], redactor: Redactor) -> String {
        PageReader.graphQLErrors(errors, redactor: redactor)
    }
}
