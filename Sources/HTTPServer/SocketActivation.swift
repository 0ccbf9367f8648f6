import Glibc

/// Listening sockets handed over by a service manager (systemd's socket activation): the
/// protocol of sd_listen_fds(3) without libsystemd. The manager opens the sockets, sets
/// `LISTEN_PID` to the process it starts and `LISTEN_FDS` to their count; they are descriptors
/// 3, 4, …. The port stays bound while fetchd restarts, and connections wait in its backlog.
public enum SocketActivation {
    /// The first descriptor passed (SD_LISTEN_FDS_START).
    static let firstDescriptor: Int32 = 3
    /// More than this is a mistake in the unit, not a plan.
    static let maxDescriptors = 64

    /// The sockets passed to this process, non-blocking and close-on-exec; none when `LISTEN_FDS`
    /// is unset or `LISTEN_PID` names another process (the variables were inherited, not meant
    /// for it). A count that is not a number, or a descriptor that is not a listening TCP socket,
    /// is an error that names it.
    public static func listeners(environment: [String: String], processID: Int32 = getpid()) throws -> [InheritedListener] {
        try listeners(environment: environment, processID: processID, from: firstDescriptor)
    }

    /// As above, with the descriptors numbered from `first` (tests pass their own sockets).
    static func listeners(environment: [String: String], processID: Int32, from first: Int32) throws -> [InheritedListener] {
        guard let countText = environment["LISTEN_FDS"] else { return [] }
        guard let pidText = environment["LISTEN_PID"], let pid = Int32(pidText), pid == processID else { return [] }
        guard let count = Int(countText), (1...maxDescriptors).contains(count) else {
            throw HTTPServerError("LISTEN_FDS=\(countText): expected a count of passed sockets from 1 to \(maxDescriptors)")
        }
        return try (0..<Int32(count)).map { try InheritedListener(descriptor: first + $0) }
    }
}

/// One passed listening socket and the address it is bound to.
public struct InheritedListener: Sendable, CustomStringConvertible {
    public let descriptor: Int32
    let address: SocketAddress

    /// Checks that `descriptor` is a listening IPv4 or IPv6 stream socket and makes it non-blocking
    /// and close-on-exec.
    init(descriptor fd: Int32) throws {
        guard Self.option(fd, SO_ACCEPTCONN) == 1, Self.option(fd, SO_TYPE) == Int32(SOCK_STREAM.rawValue) else {
            throw HTTPServerError("LISTEN_FDS: descriptor \(fd) is not a listening stream socket (ListenStream= in the socket unit)")
        }
        guard let address = Socket.localAddress(of: fd), address.family == AF_INET || address.family == AF_INET6 else {
            throw HTTPServerError("LISTEN_FDS: descriptor \(fd) is not an IPv4 or IPv6 socket")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        descriptor = fd
        self.address = address
    }

    /// "127.0.0.1:8080" or "[::]:8080".
    public var description: String { address.description }

    public var port: Int { address.port }

    /// Bound to a loopback address: reachable from this machine only.
    public var isLoopback: Bool { address.isLoopback }

    private static func option(_ fd: Int32, _ name: Int32) -> Int32? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, name, &value, &length) == 0 ? value : nil
    }
}
