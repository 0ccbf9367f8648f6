@testable import HTTPServer
import Foundation
import Glibc
import Testing
import TestSupport

private let ipv6LoopbackAvailable: Bool = {
    let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_addr = in6addr_loopback
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
    } == 0
}()

/// Binding, the connection cap and shutdown.
@Suite struct LifecycleTests {
    @Test func reportsAnAddressInUseClearly() async throws {
        try await withServer { _, port in
            var configuration = HTTPServerConfiguration()
            configuration.port = port
            let second = HTTPServer(configuration: configuration, router: Router(), logger: quietLogger)
            #expect {
                try second.start()
            } throws: { error in
                (error as? HTTPServerError)?.description == "address already in use: 127.0.0.1:\(port)"
            }
        }
    }

    @Test func reportsAnUnresolvableHost() {
        var configuration = HTTPServerConfiguration()
        configuration.host = "no such host.invalid"
        let server = HTTPServer(configuration: configuration, router: Router(), logger: quietLogger)
        #expect {
            try server.start()
        } throws: { error in
            (error as? HTTPServerError)?.description.hasPrefix("cannot resolve host") == true
        }
    }

    @Test func listensOnLocalhost() async throws {
        try await withServer(configure: { $0.host = "localhost" }) { _, port in
            let client = try RawClient.connect(port: port)
            try await client.send(request("GET", "/hello"))
            #expect(try await client.readResponse().status == 200)
        }
    }

    @Test(.enabled(if: ipv6LoopbackAvailable)) func listensOnAnIPv6Literal() async throws {
        try await withServer(configure: { $0.host = "::1" }) { _, port in
            let client = try RawClient.connect(port: port, host: "::1")
            try await client.send(request("GET", "/hello"))
            #expect(try await client.readResponse().status == 200)
        }
    }

    @Test func acceptedSocketsHaveNoDelaySet() throws {
        let (listeners, port) = try Socket.listen(host: "127.0.0.1", port: 0)
        defer { listeners.forEach { close($0) } }
        let client = try RawClient.connect(port: port)
        _ = client
        var accepted: Int32 = -1
        for _ in 0..<1000 {
            if case .accepted(let fd, _) = Socket.accept(listeners[0]) { accepted = fd; break }
            usleep(1000)
        }
        try #require(accepted >= 0)
        defer { close(accepted) }
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(accepted, Int32(IPPROTO_TCP), TCP_NODELAY, &value, &length)
        #expect(value == 1)
        #expect(fcntl(accepted, F_GETFL) & O_NONBLOCK != 0)
    }

    @Test func excessConnectionsGet503AndTheListenerKeepsAccepting() async throws {
        try await withServer(configure: { $0.maxConnections = 2 }) { server, port in
            var admitted: [RawClient] = []
            for _ in 0..<2 {
                let client = try RawClient.connect(port: port)
                try await client.send(request("GET", "/hello"))
                #expect(try await client.readResponse().status == 200)
                admitted.append(client)
            }
            // A flood beyond the cap: every one is refused, none crashes anything.
            for _ in 0..<20 {
                let extra = try RawClient.connect(port: port)
                let response = try await extra.readResponse()
                #expect(response.status == 503)
                #expect(response.header("Retry-After") == "1")
                #expect(response.header("Content-Type") == "application/problem+json")
                #expect(await extra.isClosedByServer())
            }
            admitted.removeFirst()
            #expect(await eventually { server.connectionCount == 1 })
            let later = try RawClient.connect(port: port)
            try await later.send(request("GET", "/hello"))
            #expect(try await later.readResponse().status == 200)
        }
    }

    /// From the shutdown on, the test's steps run on an executor of their own, not on the
    /// cooperative pool, which other suites can keep busy for seconds on a loaded machine: the
    /// shutdown would then start after the idle connection's read gave up, or the request be
    /// released after the shutdown's timeout closed it.
    @Test func shutdownFinishesInFlightRequestsAndClosesIdleConnections() async throws {
        let started = Gate()
        let release = Gate()
        var router = Router()
        router.add("GET", "/slow") { _, _ in
            started.open()
            await release.wait()
            return HTTPResponse(status: 200, body: .bytes(Array("done".utf8)))
        }
        router.add("GET", "/hello") { _, _ in HTTPResponse(status: 200) }
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let server = HTTPServer(configuration: configuration, router: router, logger: quietLogger)
        let port = try server.start()

        let idle = try RawClient.connect(port: port)
        try await idle.send(request("GET", "/hello"))
        #expect(try await idle.readResponse().status == 200)
        let busy = try RawClient.connect(port: port)
        try await busy.send(request("GET", "/slow"))
        await started.wait()

        let executor = QueueExecutor()
        try await withTaskExecutorPreference(executor) {
            let shutdown = Task(executorPreference: executor) { await server.shutdown(timeout: 5) }
            #expect(await idle.isClosedByServer())
            #expect(await eventually { (try? RawClient.connect(port: port)) == nil })
            release.open()
            let response = try await busy.readResponse()
            #expect(response.text == "done")
            #expect(response.header("Connection") == "close")
            await shutdown.value
        }
        #expect(server.connectionCount == 0)
    }

    @Test func shutdownClosesWhatDoesNotFinishInTime() async throws {
        let started = Gate()
        var router = Router()
        router.add("GET", "/never") { _, _ in
            started.open()
            await Gate().wait()
            return HTTPResponse(status: 200)
        }
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let server = HTTPServer(configuration: configuration, router: router, logger: quietLogger)
        let port = try server.start()
        let client = try RawClient.connect(port: port)
        try await client.send(request("GET", "/never"))
        await started.wait()
        await server.shutdown(timeout: 0.2)
        #expect(server.connectionCount == 0)
        #expect(await client.isClosedByServer())
    }

    @Test func shutdownEndsStreamedResponses() async throws {
        var router = Router()
        router.add("GET", "/events") { _, _ in
            let (stream, continuation) = AsyncStream<[UInt8]>.makeStream()
            continuation.yield(Array("data: hi\n\n".utf8))
            return HTTPResponse(status: 200, body: .stream(stream))
        }
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let server = HTTPServer(configuration: configuration, router: router, logger: quietLogger)
        let port = try server.start()
        let client = try RawClient.connect(port: port)
        try await client.send(request("GET", "/events"))
        _ = try await client.readUntil("data: hi\n\n\r\n")
        await server.shutdown(timeout: 5)
        #expect(try await client.readToEnd() == Array("0\r\n\r\n".utf8))
    }
}
