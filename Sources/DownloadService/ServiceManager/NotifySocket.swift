import Glibc

/// The service manager's notification socket (`$NOTIFY_SOCKET`, sd_notify(3)'s protocol without
/// libsystemd): a datagram of newline-separated `NAME=value` lines to a Unix socket, a path or,
/// with a leading `@`, an abstract name.
public struct NotifySocket: Sendable {
    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    private let address: [UInt8]

    /// Nil when `NOTIFY_SOCKET` is unset or empty: no service manager listens.
    public init?(environment: [String: String]) throws {
        guard let value = environment["NOTIFY_SOCKET"], !value.isEmpty else { return nil }
        guard value.hasPrefix("/") || value.hasPrefix("@") else {
            throw Invalid(description: "NOTIFY_SOCKET=\(value): expected an absolute path or an @abstract name")
        }
        var bytes = Array(value.utf8)
        if bytes[0] == UInt8(ascii: "@") { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
        guard bytes.count < capacity else {
            throw Invalid(description: "NOTIFY_SOCKET=\(value): longer than a Unix socket address (\(capacity - 1) bytes)")
        }
        address = bytes
    }

    /// Sends one message; false when it could not be sent (nobody listens any more). A datagram
    /// is never partly sent, and the manager does not answer.
    @discardableResult
    public func send(_ message: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var target = sockaddr_un()
        target.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &target.sun_path) { path in
            path.copyBytes(from: address)
        }
        // An abstract name is exactly as long as given; a path ends at its NUL.
        let length = MemoryLayout<sa_family_t>.size + address.count + (address.first == 0 ? 0 : 1)
        let bytes = Array(message.utf8)
        let sent = withUnsafePointer(to: &target) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL), $0, socklen_t(length))
            }
        }
        return sent == bytes.count
    }
}
