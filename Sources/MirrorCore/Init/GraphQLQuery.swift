import Foundation

/// `mirror init URL --graphql QUERY`: the query a GraphQL job POSTs, and the variable it
/// passes as `after:`, which carries each page's cursor (left out of the first request).
package struct GraphQLQuery: Sendable, Equatable {
    package let text: String
    /// The variable passed as `after:` (`after: $after` gives `after`).
    package let cursorVariable: String

    package init(_ text: String) throws(InitFailure) {
        guard let match = text.firstMatch(of: /\bafter\s*:\s*\$([_A-Za-z][_0-9A-Za-z]*)/) else {
            throw .undecidable("the GraphQL query passes no variable as `after:`: declare one and pass it to the connection, "
                + "as in `query($after: String) { issues(first: 50, after: $after) { nodes { id } pageInfo { hasNextPage endCursor } } }`, "
                + "so that each page's cursor goes in the variables; no job written")
        }
        self.text = text
        cursorVariable = String(match.1)
    }

    /// The query given on the command line, or read from the file an `@FILE` names.
    package static func reading(_ argument: String) throws -> GraphQLQuery {
        guard argument.hasPrefix("@") else { return try GraphQLQuery(argument) }
        let file = String(argument.dropFirst())
        guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8) else {
            throw UsageError("cannot read the GraphQL query file \(file)")
        }
        return try GraphQLQuery(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The job's `body:`, a flow mapping: the query, and the cursor in its variable.
    var body: String {
        "{ query: \(JobProposal.scalar(text)), variables: { \(JobProposal.scalar(cursorVariable)): \"{cursor}\" } }"
    }
}
