/// One complete HTTP request, body included.
public struct HTTPRequest: Sendable {
    /// As sent, e.g. "GET" (methods are case-sensitive).
    public var method: String
    /// The raw request-target, e.g. "/downloads?state=queued".
    public var target: String
    /// The percent-decoded path, without the query.
    public var path: String
    /// Decoded query parameters; the last occurrence of a name wins; '+' is a space.
    public var query: [String: String]
    /// "HTTP/1.1" or "HTTP/1.0".
    public var version: String
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// "host:port" of the peer ("[::1]:port" for IPv6).
    public var remoteAddress: String

    /// Derives `path` and `query` from `target` (origin-form or absolute-form).
    public init(
        method: String,
        target: String,
        version: String = "HTTP/1.1",
        headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [],
        remoteAddress: String = ""
    ) {
        let parts = RequestTarget(target)
        self.method = method
        self.target = target
        self.path = percentDecoded(parts.path, plusAsSpace: false)
        self.query = parts.query.map(decodeQuery) ?? [:]
        self.version = version
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
    }
}

/// The raw (still percent-encoded) path and query of a request-target.
struct RequestTarget {
    var path: Substring
    var query: Substring?

    /// Scans UTF-8 code units rather than Characters: the delimiters are ASCII, and this runs
    /// for every request.
    init(_ target: String) {
        let utf8 = target.utf8
        var pathStart = utf8.startIndex
        // absolute-form ("http://host/path"): the path starts after the authority.
        if utf8.first != UInt8(ascii: "/"), let colon = utf8.firstIndex(of: UInt8(ascii: ":")),
           utf8[colon...].starts(with: "://".utf8),
           equalsIgnoringASCIICase(String(target[..<colon]), "http") || equalsIgnoringASCIICase(String(target[..<colon]), "https") {
            let authority = utf8.index(colon, offsetBy: 3)
            pathStart = utf8[authority...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? utf8.endIndex
        }
        if let mark = utf8[pathStart...].firstIndex(of: UInt8(ascii: "?")) {
            path = target[pathStart..<mark]
            query = target[utf8.index(after: mark)...]
        } else {
            path = target[pathStart...]
            query = nil
        }
        if path.isEmpty { path = "/" }
    }
}

private func decodeQuery(_ query: Substring) -> [String: String] {
    var result: [String: String] = [:]
    for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
        if let equals = pair.firstIndex(of: "=") {
            let name = percentDecoded(pair[..<equals], plusAsSpace: true)
            result[name] = percentDecoded(pair[pair.index(after: equals)...], plusAsSpace: true)
        } else {
            result[percentDecoded(pair, plusAsSpace: true)] = ""
        }
    }
    return result
}
