/// Limits and timeouts of an `HTTPServer`. Timeouts are in seconds.
public struct HTTPServerConfiguration: Sendable {
    /// An IPv4 or IPv6 literal, or a name such as "localhost" (every address it resolves to is bound).
    public var host: String = "127.0.0.1"
    /// 0 binds any free port; `HTTPServer.start()` returns the port bound.
    public var port: Int = 8080
    /// Sockets passed by the service manager (`SocketActivation`); when there are any, they are
    /// served and `host` and `port` are not bound.
    public var inheritedListeners: [InheritedListener] = []
    /// A longer request line is answered 414.
    public var maxRequestLineBytes = 8 * 1024
    /// A larger header section is answered 431.
    public var maxHeaderBytes = 64 * 1024
    /// More header fields are answered 431.
    public var maxHeaderCount = 100
    /// A larger body (declared or decoded) is answered 413.
    public var maxBodyBytes = 1024 * 1024
    /// Paths (as sent, without the query) whose bodies may be larger than `maxBodyBytes`, and their cap.
    public var maxBodyBytesByPath: [String: Int] = [:]
    /// From the first byte of a request head to its end.
    public var headReadTimeout: Double = 10
    /// From the end of a request head to the end of its body.
    public var bodyReadTimeout: Double = 30
    /// How long a keep-alive connection may wait for its next request.
    public var idleTimeout: Double = 60
    /// How long a response write may make no progress (the client stopped reading).
    public var writeTimeout: Double = 30
    /// Connections beyond this are answered 503 (Retry-After: 1) and closed.
    public var maxConnections = 1024

    public init() {}

    /// The body cap for a request-target.
    func maxBodyBytes(forTarget target: String) -> Int {
        guard !maxBodyBytesByPath.isEmpty else { return maxBodyBytes }
        return maxBodyBytesByPath[String(RequestTarget(target).path)] ?? maxBodyBytes
    }
}
