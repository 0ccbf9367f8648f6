/// Values of the `{name}` segments of the route that matched, percent-decoded.
public struct PathParameters: Sendable {
    private let values: [String: String]

    public init(_ values: [String: String] = [:]) {
        self.values = values
    }

    public subscript(_ name: String) -> String? { values[name] }
}

/// Answers one request. It runs in a task whose executor preference is the connection's event
/// loop (so the response is written without a thread hop); child tasks inherit that. The loop
/// serves other connections too, so work that blocks or runs long belongs in a detached task
/// or on an actor, and the handler awaits it.
public typealias HTTPHandler = @Sendable (HTTPRequest, PathParameters) async -> HTTPResponse

/// Maps method and path to a handler.
///
/// Patterns are like "/downloads/{id}/pause": literal segments match exactly, `{name}` matches
/// one non-empty segment. Where two patterns match a path, the one with a literal segment
/// earlier wins ("/downloads/stats" before "/downloads/{id}"), whatever the order they were added.
public struct Router: Sendable {
    private enum Segment: Sendable {
        case literal(String)
        case parameter(String)
    }

    private struct Route: Sendable {
        var method: String
        var segments: [Segment]
        var handler: HTTPHandler
    }

    /// The outcome of matching a request.
    enum Match {
        case handler(HTTPHandler, PathParameters)
        /// 404 or 405, answered by the router itself.
        case response(HTTPResponse)
    }

    private var routes: [Route] = []

    public init() {}

    public mutating func add(_ method: String, _ pattern: String, _ handler: @escaping HTTPHandler) {
        let segments: [Segment] = splitPath(pattern[...]).map { segment in
            if segment.hasPrefix("{") && segment.hasSuffix("}") && segment.count >= 2 {
                return .parameter(String(segment.dropFirst().dropLast()))
            }
            return .literal(String(segment))
        }
        let route = Route(method: method, segments: segments, handler: handler)
        let position = routes.firstIndex { Self.isMoreSpecific(route.segments, than: $0.segments) } ?? routes.endIndex
        routes.insert(route, at: position)
    }

    /// Runs the matching handler, or answers 404/405 itself. For tests and embedding; the server
    /// uses `match(_:)` directly.
    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        switch match(request) {
        case .handler(let handler, let parameters): await handler(request, parameters)
        case .response(let response): response
        }
    }

    func match(_ request: HTTPRequest) -> Match {
        let segments = splitPath(RequestTarget(request.target).path)
        var allowed: [String] = []
        for route in routes {
            guard let parameters = Self.bind(route.segments, to: segments) else { continue }
            if route.method == request.method || (request.method == "HEAD" && route.method == "GET") {
                return .handler(route.handler, PathParameters(parameters))
            }
            allowed.append(route.method)
        }
        guard !allowed.isEmpty else {
            return .response(.problem(404, detail: "There is no resource at this path."))
        }
        if allowed.contains("GET") { allowed.append("HEAD") }
        let allow = Set(allowed).sorted().joined(separator: ", ")
        return .response(.problem(
            405,
            detail: "This path does not serve \(request.method).",
            headers: HTTPHeaders([("Allow", allow)])
        ))
    }

    /// The parameters bound when `pattern` matches the raw path `segments`, or nil.
    private static func bind(_ pattern: [Segment], to segments: [Substring]) -> [String: String]? {
        guard pattern.count == segments.count else { return nil }
        var parameters: [String: String] = [:]
        for (expected, raw) in zip(pattern, segments) {
            switch expected {
            case .literal(let literal):
                // Literals compare decoded, so "/down%6Coads" still finds "/downloads".
                let decoded = raw.utf8.contains(UInt8(ascii: "%")) ? percentDecoded(raw, plusAsSpace: false)[...] : raw
                guard decoded == literal else { return nil }
            case .parameter(let name):
                guard !raw.isEmpty else { return nil }
                parameters[name] = percentDecoded(raw, plusAsSpace: false)
            }
        }
        return parameters
    }

    /// Literal before parameter at the first segment where the two differ in kind.
    private static func isMoreSpecific(_ a: [Segment], than b: [Segment]) -> Bool {
        for (x, y) in zip(a, b) {
            switch (x, y) {
            case (.literal, .parameter): return true
            case (.parameter, .literal): return false
            default: continue
            }
        }
        return false
    }
}

/// Splits a raw path into its segments, each still percent-encoded: "/a/b" → ["a", "b"],
/// "/" → [""]. Splitting before decoding keeps an encoded "/" (%2F) inside its segment.
private func splitPath(_ path: Substring) -> [Substring] {
    let utf8 = path.utf8
    guard utf8.first == UInt8(ascii: "/") else { return [path] }
    var segments: [Substring] = []
    var segmentStart = utf8.index(after: utf8.startIndex)
    while let slash = utf8[segmentStart...].firstIndex(of: UInt8(ascii: "/")) {
        segments.append(path[segmentStart..<slash])
        segmentStart = utf8.index(after: slash)
    }
    segments.append(path[segmentStart...])
    return segments
}
