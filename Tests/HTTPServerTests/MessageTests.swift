@testable import HTTPServer
import Testing

/// Request bodies and response framing over real sockets.
@Suite struct MessageTests {
    @Test func contentLengthBodyReachesTheHandler() async throws {
        try await withServer { _, port in
            let client = try RawClient.connect(port: port)
            try await client.send(request("POST", "/echo", body: "hello world"))
            let response = try await client.readResponse()
            #expect(response.status == 200)
            #expect(response.text == "hello world")
            #expect(response.header("Content-Length") == "11")
        }
    }

    @Test func chunkedBodyWithExtensionsAndTrailersReachesTheHandler() async throws {
        try await withServer { _, port in
            let client = try RawClient.connect(port: port)
            try await client.send("POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")
            try await client.send("5;ext=1\r\nhello\r\n")
            try await client.send("6\r\n world\r\n0\r\nX-Checksum: abc\r\n\r\n")
            let response = try await client.readResponse()
            #expect(response.text == "hello world")
            // The connection stays usable after the trailers.
            try await client.send(request("GET", "/hello"))
            #expect(try await client.readResponse().status == 200)
        }
    }

    @Test func expectContinueIsAnsweredBeforeTheBody() async throws {
        try await withServer { _, port in
            let client = try RawClient.connect(port: port)
            try await client.send("POST /echo HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
            let interim = try await client.readResponse()
            #expect(interim.status == 100)
            try await client.send("body")
            let response = try await client.readResponse()
            #expect(response.status == 200)
            #expect(response.text == "body")
        }
    }

    @Test func headHasTheHeadersOfGETButNoBody() async throws {
        try await withServer { _, port in
            let client = try RawClient.connect(port: port)
            try await client.send(request("GET", "/hello"))
            let get = try await client.readResponse()
            try await client.send(request("HEAD", "/hello"))
            let head = try await client.readResponse(head: true)
            #expect(head.status == 200)
            #expect(head.header("Content-Length") == get.header("Content-Length"))
            #expect(head.header("Content-Type") == "application/json")
            // Had a body been sent, this next response would not parse.
            try await client.send(request("GET", "/hello"))
            #expect(try await client.readResponse().text == #"{"hello":"world"}"#)
        }
    }

    @Test func noContentResponsesHaveNoBodyOrLength() async throws {
        try await withServer(routes: { router in
            router.add("DELETE", "/thing") { _, _ in HTTPResponse(status: 204, body: .bytes(Array("ignored".utf8))) }
        }) { _, port in
            let client = try RawClient.connect(port: port)
            try await client.send(request("DELETE", "/thing") + request("GET", "/hello"))
            let deleted = try await client.readResponse()
            #expect(deleted.status == 204)
            #expect(deleted.header("Content-Length") == nil)
            #expect(try await client.readResponse().status == 200)
        }
    }

    @Test func largeBodiesCrossManyReadsAndPartialWrites() async throws {
        // Far larger than the socket buffers (the client's is fixed at 256 KiB, the server's
        // send buffer grows to 4 MiB at most), so the response meets EAGAIN and the write source.
        let download = [UInt8](unsafeUninitializedCapacity: 16 * 1024 * 1024) { buffer, count in
            for index in buffer.indices { buffer[index] = UInt8(truncatingIfNeeded: index % 251) }
            count = buffer.count
        }
        try await withServer(routes: { router in
            router.add("GET", "/big") { _, _ in HTTPResponse(status: 200, body: .bytes(download)) }
        }) { _, port in
            let client = try RawClient.connect(port: port, receiveBuffer: 256 * 1024)
            let upload = String(repeating: "0123456789", count: 100_000)
            try await client.send(request("POST", "/echo", body: upload) + request("GET", "/big"))
            #expect(try await client.readResponse().text == upload)
            let big = try await client.readResponse()
            #expect(big.body.count == download.count)
            #expect(big.body == download)
        }
    }

    @Test func handlerSeesTheRemoteAddress() async throws {
        try await withServer(routes: { router in
            router.add("GET", "/whoami") { request, _ in HTTPResponse(status: 200, body: .bytes(Array(request.remoteAddress.utf8))) }
        }) { _, port in
            let client = try RawClient.connect(port: port)
            try await client.send(request("GET", "/whoami"))
            #expect(try await client.readResponse().text.hasPrefix("127.0.0.1:"))
        }
    }
}
