@testable import HTTPServer
import Testing
import TestSupport

/// `HTTPBody.stream` (Server-Sent Events) over real sockets.
@Suite struct StreamingTests {
    private static func events(_ count: Int) -> AsyncStream<[UInt8]> {
        AsyncStream { continuation in
            for index in 0..<count { continuation.yield(Array("data: \(index)\n\n".utf8)) }
            continuation.yield([])
            continuation.finish()
        }
    }

    @Test func streamIsSentChunkedAndTheConnectionIsKept() async throws {
        try await withServer(routes: { router in
            router.add("GET", "/events") { _, _ in
                HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "text/event-stream")]), body: .stream(Self.events(3)))
            }
        }) { _, port in
            let client = try RawClient.connect(port: port)
            try await client.send(request("GET", "/events"))
            let response = try await client.readResponse()
            #expect(response.header("Transfer-Encoding") == "chunked")
            #expect(response.header("Content-Length") == nil)
            #expect(response.text == "data: 0\n\ndata: 1\n\ndata: 2\n\n")
            try await client.send(request("GET", "/hello"))
            #expect(try await client.readResponse().status == 200)
        }
    }

    @Test func headOfAStreamHasNoBody() async throws {
        try await withServer(routes: { router in
            router.add("GET", "/events") { _, _ in HTTPResponse(status: 200, body: .stream(Self.events(1))) }
        }) { _, port in
            let client = try RawClient.connect(port: port)
            try await client.send(request("HEAD", "/events") + request("GET", "/hello"))
            let head = try await client.readResponse(head: true)
            #expect(head.header("Transfer-Encoding") == "chunked")
            #expect(try await client.readResponse().status == 200)
        }
    }

    @Test func http10StreamIsDelimitedByClose() async throws {
        try await withServer(routes: { router in
            router.add("GET", "/events") { _, _ in HTTPResponse(status: 200, body: .stream(Self.events(2))) }
        }) { _, port in
            let client = try RawClient.connect(port: port)
            try await client.send("GET /events HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            let response = try await client.readResponse()
            #expect(response.header("Connection") == "close")
            #expect(response.header("Transfer-Encoding") == nil)
            #expect(response.text == "data: 0\n\ndata: 1\n\n")
        }
    }

    @Test func clientDisconnectStopsConsumingTheStream() async throws {
        let terminated = Gate()
        try await withServer(routes: { router in
            router.add("GET", "/events") { _, _ in
                let stream = AsyncStream<[UInt8]> { continuation in
                    continuation.onTermination = { _ in terminated.open() }
                    continuation.yield(Array("data: first\n\n".utf8))
                }
                return HTTPResponse(status: 200, body: .stream(stream))
            }
        }) { server, port in
            let client = try RawClient.connect(port: port)
            try await client.send(request("GET", "/events"))
            _ = try await client.readUntil("data: first\n\n")
            #expect(!terminated.isOpen)
            client.shutdownWrite()
            #expect(await eventually { terminated.isOpen })
            #expect(await eventually { server.connectionCount == 0 })
        }
    }
}
