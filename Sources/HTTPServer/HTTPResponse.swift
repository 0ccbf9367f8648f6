/// The body of a response.
public enum HTTPBody: Sendable {
    case bytes([UInt8])
    /// Streamed with chunked transfer-encoding (used for Server-Sent Events); the server writes
    /// each element as it arrives and ends the response when the stream finishes. If the client
    /// disconnects, the server stops iterating (cancelling consumption).
    case stream(AsyncStream<[UInt8]>)
}

/// A response as a handler returns it. The server adds the framing headers itself
/// (`Content-Length` or `Transfer-Encoding`, and `Connection`), replacing any given here.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: HTTPBody

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: HTTPBody = .bytes([])) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response with `Content-Type: application/json` and `body` as given (already encoded).
    public static func json(_ status: Int, _ body: [UInt8], headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var headers = headers
        headers.set("Content-Type", "application/json")
        return HTTPResponse(status: status, headers: headers, body: .bytes(body))
    }
}
