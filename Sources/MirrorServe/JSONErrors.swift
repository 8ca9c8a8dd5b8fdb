import HTTPTypes
import Hummingbird
import HummingbirdCore

/// Writes a thrown `HTTPError` as every error of `mirror serve` reads: `{"error":"…"}` and a
/// newline, with the error's status and headers. (Hummingbird's own body for it would be
/// `{"error":{"message":"…"}}`.) Other errors go on as they are: one Hummingbird cannot
/// answer otherwise is a 500.
struct JSONErrors<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError {
            var response = ReadAPI.Answer.error(error.body ?? error.status.reasonPhrase, status: error.status.code).response
            response.headers.append(contentsOf: error.headers)
            return response
        }
    }
}
