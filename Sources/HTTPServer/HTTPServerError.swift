/// Why the server could not start: resolving, binding or listening failed.
public struct HTTPServerError: Error, CustomStringConvertible {
    /// e.g. "address already in use: 127.0.0.1:8080".
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
