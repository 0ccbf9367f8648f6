@testable import HTTPServer
import Glibc
import Testing

/// Sockets passed by a service manager (LISTEN_FDS): which are taken, which are refused, and
/// that the server serves on them.
@Suite struct SocketActivationTests {
    /// A TCP socket bound to a free port of `host`, listening unless told not to.
    private func boundSocket(_ host: String = "127.0.0.1", listening: Bool = true) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, host, &address.sin_addr)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, bound == 0, !listening || listen(fd, 8) == 0 else { throw ClientError(description: "cannot bind \(host)") }
        return fd
    }

    private func environment(count: String = "1", pid: Int32 = getpid()) -> [String: String] {
        ["LISTEN_FDS": count, "LISTEN_PID": "\(pid)"]
    }

    @Test func noVariablesNoSockets() throws {
        #expect(try SocketActivation.listeners(environment: [:]).isEmpty)
    }

    @Test func variablesForAnotherProcessAreIgnored() throws {
        let fd = try boundSocket()
        defer { close(fd) }
        #expect(try SocketActivation.listeners(environment: environment(pid: getpid() + 1), processID: getpid(), from: fd).isEmpty)
        #expect(try SocketActivation.listeners(environment: ["LISTEN_FDS": "1"], processID: getpid(), from: fd).isEmpty)
    }

    @Test(arguments: ["0", "-1", "two", "65"])
    func aBadCountIsRefusedNamingIt(_ count: String) {
        #expect {
            try SocketActivation.listeners(environment: environment(count: count))
        } throws: { error in
            "\(error)".hasPrefix("LISTEN_FDS=\(count): expected a count")
        }
    }

    @Test func aSocketThatDoesNotListenIsRefused() throws {
        let fd = try boundSocket(listening: false)
        defer { close(fd) }
        #expect {
            try SocketActivation.listeners(environment: environment(), processID: getpid(), from: fd)
        } throws: { error in
            "\(error)" == "LISTEN_FDS: descriptor \(fd) is not a listening stream socket (ListenStream= in the socket unit)"
        }
    }

    @Test func tellsLoopbackFromEveryAddress() throws {
        let loopback = try boundSocket("127.0.0.1")
        let any = try boundSocket("0.0.0.0")
        defer { [loopback, any].forEach { close($0) } }
        let passedLoopback = try SocketActivation.listeners(environment: environment(), processID: getpid(), from: loopback)
        let passedAny = try SocketActivation.listeners(environment: environment(), processID: getpid(), from: any)
        #expect(passedLoopback.map(\.isLoopback) == [true])
        #expect(passedAny.map(\.isLoopback) == [false])
        #expect(passedAny.first?.description.hasPrefix("0.0.0.0:") == true)
        #expect(fcntl(loopback, F_GETFL) & O_NONBLOCK != 0)
        #expect(fcntl(loopback, F_GETFD) & FD_CLOEXEC != 0)
    }

    @Test func theServerServesOnThePassedSocket() async throws {
        let fd = try boundSocket()
        let passed = try SocketActivation.listeners(environment: environment(), processID: getpid(), from: fd)
        try await withServer(configure: { $0.inheritedListeners = passed }) { _, port in
            #expect(port == passed.first?.port)
            let client = try RawClient.connect(port: port)
            try await client.send(request("GET", "/hello"))
            #expect(try await client.readResponse().status == 200)
        }
    }
}
