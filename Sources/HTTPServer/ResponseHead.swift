/// How a response body is delimited on the wire.
enum BodyFraming {
    /// `Content-Length: n`.
    case length(Int)
    /// `Transfer-Encoding: chunked`.
    case chunked
    /// Neither (1xx, 204, 304).
    case none
}

/// The fields the server itself puts in every response head, besides the framing.
struct ServerFields {
    /// The `Date` field (RFC 9110 §6.6.1); a handler's own is replaced.
    var date: String
    /// The body was gzipped: `Content-Encoding: gzip`.
    var gzipped = false
    /// The body's form depends on `Accept-Encoding`: `Vary: Accept-Encoding`, for caches.
    var variesWithAcceptEncoding = false
    /// A streamed body: `X-Accel-Buffering: no`, so that nginx with its default proxy settings
    /// passes each event on at once instead of buffering the response until it ends.
    var streamed = false
}

/// Appends a serialized HTTP/1.1 response head to `out`.
///
/// Framing and connection headers are the server's business, so those given by the handler
/// are replaced, and so is `Date`. A response without `Cache-Control` gets `no-store`: every
/// answer is the state of the moment, which a cache must not serve again. Fields whose name is
/// not a token or whose value holds CR, LF or NUL are dropped: writing them would let a
/// handler split the response.
func appendResponseHead(
    status: Int,
    headers: HTTPHeaders,
    framing: BodyFraming,
    connection: String?,
    server: ServerFields,
    to out: inout [UInt8]
) {
    out.append(contentsOf: "HTTP/1.1 ".utf8)
    out.append(contentsOf: String(status).utf8)
    out.append(UInt8(ascii: " "))
    out.append(contentsOf: reasonPhrase(status).utf8)
    out.append(contentsOf: "\r\n".utf8)
    appendField("Date", server.date, to: &out)
    var cacheControlGiven = false, accelBufferingGiven = false
    for (name, value) in headers {
        if equalsIgnoringASCIICase(name, "Content-Length") || equalsIgnoringASCIICase(name, "Transfer-Encoding")
            || equalsIgnoringASCIICase(name, "Connection") || equalsIgnoringASCIICase(name, "Date") {
            continue
        }
        guard !name.isEmpty, name.utf8.allSatisfy(isTokenByte),
              !value.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) else { continue }
        cacheControlGiven = cacheControlGiven || equalsIgnoringASCIICase(name, "Cache-Control")
        accelBufferingGiven = accelBufferingGiven || equalsIgnoringASCIICase(name, "X-Accel-Buffering")
        appendField(name, value, to: &out)
    }
    if !cacheControlGiven { appendField("Cache-Control", "no-store", to: &out) }
    if server.streamed && !accelBufferingGiven { appendField("X-Accel-Buffering", "no", to: &out) }
    if server.gzipped { appendField("Content-Encoding", "gzip", to: &out) }
    if server.variesWithAcceptEncoding { appendField("Vary", "Accept-Encoding", to: &out) }
    switch framing {
    case .length(let count): appendField("Content-Length", String(count), to: &out)
    case .chunked: appendField("Transfer-Encoding", "chunked", to: &out)
    case .none: break
    }
    if let connection {
        appendField("Connection", connection, to: &out)
    }
    out.append(contentsOf: "\r\n".utf8)
}

private func appendField(_ name: String, _ value: String, to out: inout [UInt8]) {
    out.append(contentsOf: name.utf8)
    out.append(contentsOf: ": ".utf8)
    out.append(contentsOf: value.utf8)
    out.append(contentsOf: "\r\n".utf8)
}

/// Whether a response with this status may carry a body (RFC 9110 §6.4.1).
func statusAllowsBody(_ status: Int) -> Bool {
    !(100..<200).contains(status) && status != 204 && status != 304
}

func reasonPhrase(_ status: Int) -> String {
    switch status {
    case 100: "Continue"
    case 101: "Switching Protocols"
    case 200: "OK"
    case 201: "Created"
    case 202: "Accepted"
    case 204: "No Content"
    case 206: "Partial Content"
    case 301: "Moved Permanently"
    case 302: "Found"
    case 303: "See Other"
    case 304: "Not Modified"
    case 307: "Temporary Redirect"
    case 308: "Permanent Redirect"
    case 400: "Bad Request"
    case 401: "Unauthorized"
    case 403: "Forbidden"
    case 404: "Not Found"
    case 405: "Method Not Allowed"
    case 406: "Not Acceptable"
    case 408: "Request Timeout"
    case 409: "Conflict"
    case 410: "Gone"
    case 411: "Length Required"
    case 412: "Precondition Failed"
    case 413: "Content Too Large"
    case 414: "URI Too Long"
    case 415: "Unsupported Media Type"
    case 416: "Range Not Satisfiable"
    case 417: "Expectation Failed"
    case 421: "Misdirected Request"
    case 422: "Unprocessable Content"
    case 428: "Precondition Required"
    case 429: "Too Many Requests"
    case 431: "Request Header Fields Too Large"
    case 500: "Internal Server Error"
    case 501: "Not Implemented"
    case 502: "Bad Gateway"
    case 503: "Service Unavailable"
    case 504: "Gateway Timeout"
    case 505: "HTTP Version Not Supported"
    default: "Status \(status)"
    }
}
