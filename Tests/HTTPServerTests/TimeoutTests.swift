@testable import HTTPServer
import Glibc
import Testing
import TestSupport

/// Deadlines, with short timeouts so the suite stays fast. Waiting for them is the point here,
/// so these tests wait on the server's action (a 408, a close), never on a fixed sleep.
@Suite struct TimeoutTests {
    @Test func slowHeadGets408EvenIfBytesKeepTrickling() async throws {
        try await withServer(configure: { $0.headReadTimeout = 0.3 }) { _, port in
            let client = try RawClient.connect(port: port)
            // A slow-loris client: one byte every 50 ms never completes its head. The first byte
            // goes out here, not in the task: other suites running in parallel can keep the
            // task from starting for seconds, and the head deadline runs from the first byte.
            #expect(client.sendWithoutBlocking(Array("G".utf8)) == 1)
            let trickle = Task {
                for byte in "ET /hello HTTP/1.1\r\nX-Slow: ".utf8 + Array(repeating: UInt8(ascii: "a"), count: 1000) {
                    guard client.sendWithoutBlocking([byte]) == 1 else { return }
                    try? await Task.sleep(for: .milliseconds(50))
                }
            }
            defer { trickle.cancel() }
            let response = try await client.readResponse()
            #expect(response.status == 408)
            #expect(response.header("Content-Type") == "application/problem+json")
            #expect(await client.isClosedByServer())
        }
    }

    @Test func slowBodyGets408() async throws {
        try await withServer(configure: { $0.bodyReadTimeout = 0.2 }) { _, port in
            let client = try RawClient.connect(port: port)
            try await client.send("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc")
            let response = try await client.readResponse()
            #expect(response.status == 408)
            #expect(await client.isClosedByServer())
        }
    }

    @Test func idleKeepAliveConnectionIsClosedSilently() async throws {
        try await withServer(configure: { $0.idleTimeout = 0.2 }) { server, port in
            let client = try RawClient.connect(port: port)
            try await client.send(request("GET", "/hello"))
            #expect(try await client.readResponse().status == 200)
            #expect(await client.isClosedByServer())
            #expect(try await client.readToEnd().isEmpty)
            #expect(await eventually { server.connectionCount == 0 })
        }
    }

    @Test func clientThatStopsReadingIsDroppedAfterTheWriteTimeout() async throws {
        let size = 16 * 1024 * 1024
        try await withServer(configure: { $0.writeTimeout = 0.2 }, routes: { router in
            router.add("GET", "/big") { _, _ in HTTPResponse(status: 200, body: .bytes([UInt8](repeating: 7, count: size))) }
        }) { server, port in
            let client = try RawClient.connect(port: port)
            var small: Int32 = 4096
            setsockopt(client.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
            try await client.send(request("GET", "/big"))
            // The response cannot complete while the client reads nothing, so only the write
            // timeout can have closed the connection. (Not reading the rest afterwards: with a
            // tiny receive window, draining it would take minutes.)
            #expect(await eventually { server.connectionCount == 0 })
        }
    }
}
