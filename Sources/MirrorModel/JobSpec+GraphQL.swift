import Foundation
import MirrorJSON

extension JobSpec {
    /// A GraphQL job: its JSON body has a string `query` member (a POST, as GraphQL clients
    /// send it), or its URL's path ends in `/graphql` (a GET with the query in the URL). Its
    /// responses are read for a top-level `errors` array, which GraphQL sends with a 200.
    package var isGraphQL: Bool {
        if let body, !body.form, let document = try? JSONDocument(parsing: Array(body.json.utf8)),
           document.root["query"]?.kind == .string {
            return true
        }
        let url = url.url(page: pages.from, cursor: nil, redactor: redactor).real
        guard let path = URLComponents(string: url)?.path else { return false }
        return path.hasSuffix("/graphql")
    }
}
