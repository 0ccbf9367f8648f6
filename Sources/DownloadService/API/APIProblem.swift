import DownloadCore
import HTTPServer
import Logging

/// An answer a handler gives by throwing it. Handlers throw these for what they know about the
/// request (bad input, no such job, a conflict); anything else they throw — a database error —
/// becomes `503` in `APIProblem.response(for:)`, the one place errors turn into responses. So a
/// failed read is never answered as "no such job".
struct APIProblem: Error {
    var status: Int
    var title: String
    var detail: String
    var errors: [FieldError] = []
    var headers = HTTPHeaders()

    var response: HTTPResponse {
        .problem(status, title: title, detail: detail, errors: errors.map { (field: $0.field, message: $0.message) }, headers: headers)
    }

    static func invalid(_ errors: [FieldError]) -> APIProblem {
        APIProblem(status: 400, title: "Bad Request",
                   detail: errors.map { "\($0.field.isEmpty ? "body" : $0.field): \($0.message)" }.joined(separator: "; "),
                   errors: errors)
    }

    static func invalid(_ field: String, _ message: String) -> APIProblem {
        invalid([FieldError(field: field, message: message)])
    }

    static func notFound(_ what: String = "no download with this id") -> APIProblem {
        APIProblem(status: 404, title: "Not Found", detail: what)
    }

    static func conflict(_ detail: String) -> APIProblem {
        APIProblem(status: 409, title: "Conflict", detail: detail)
    }

    static let destinationBusy = conflict("another live job already writes to this destination")

    static func unsupportedMediaType(_ detail: String) -> APIProblem {
        APIProblem(status: 415, title: "Unsupported Media Type", detail: detail)
    }

    static let keyMismatch = APIProblem(status: 422, title: "Unprocessable Content",
                                        detail: "this Idempotency-Key was used with a different body")

    static func tooManyRequests(_ detail: String, retryAfterSeconds: Int) -> APIProblem {
        APIProblem(status: 429, title: "Too Many Requests", detail: detail, headers: HTTPHeaders([("Retry-After", String(retryAfterSeconds))]))
    }

    static func unavailable(_ detail: String) -> APIProblem {
        APIProblem(status: 503, title: "Service Unavailable", detail: detail, headers: HTTPHeaders([("Retry-After", "1")]))
    }

    /// The response for anything a handler threw. Errors other than `APIProblem` come from the
    /// store (or the file system under it): the request could not be served now, so `503` with
    /// `Retry-After`, and the cause goes to the log, not to the client.
    static func response(for error: any Error, logger: Logger) -> HTTPResponse {
        if let problem = error as? APIProblem { return problem.response }
        logger.error("request failed: the store is unavailable", metadata: ["error": "\(error)"])
        return unavailable("the request could not be served now; the database is unavailable, try again").response
    }
}
