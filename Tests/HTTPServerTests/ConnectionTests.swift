@testable import HTTPServer
import Testing

/// Persistence and pipelining (RFC 9112 §9) over real sockets.
@Suite struct ConnectionTests {
    @Test func http11KeepsTheConnectionOpenByDefault() async throws {
        try await withServer { server, port in
            let client = try RawClient.connect(port: port)
            for _ in 0..<3 {
                try await client.send(request("GET", "/hello"))
                let response = try await client.readResponse()
                #expect(response.status == 200)
                #expect(response.header("Connection") == nil)
            }
            #expect(server.connectionCount == 1)
        }
    }

    @Test func connectionCloseIsHonoured() async throws {
        try await withServer { _, port in
            let client = try RawClient.connect(port: port)
            try await client.send(request("GET", "/hello", headers: ["Connection: close"]))
            let response = try await client.readResponse()
            #expect(response.status == 200)
            #expect(response.header("Connection") == "close")
            #expect(await client.isClosedByServer())
        }
    }

    @Test func http10ClosesUnlessKeepAliveIsAsked() async throws {
        try await withServer { _, port in
            let closing = try RawClient.connect(port: port)
            try await closing.send("GET /hello HTTP/1.0\r\n\r\n")
            #expect(try await closing.readResponse().header("Connection") == "close")
            #expect(await closing.isClosedByServer())

            let persistent = try RawClient.connect(port: port)
            for _ in 0..<2 {
                try await persistent.send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                let response = try await persistent.readResponse()
                #expect(response.status == 200)
                #expect(response.header("Connection") == "keep-alive")
            }
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        try await withServer(routes: { router in
            router.add("GET", "/n/{n}") { _, parameters in
                // Later requests finish faster; order must still hold.
                let n = Int(parameters["n"] ?? "") ?? 0
                for _ in 0..<(10 - n) * 20 { await Task.yield() }
                return HTTPResponse(status: 200, body: .bytes(Array("\(n)".utf8)))
            }
        }) { _, port in
            let client = try RawClient.connect(port: port)
            try await client.send((0..<10).map { request("GET", "/n/\($0)") }.joined() + request("POST", "/echo", body: "end"))
            var bodies: [String] = []
            for _ in 0...10 { bodies.append(try await client.readResponse().text) }
            #expect(bodies == (0..<10).map(String.init) + ["end"])
        }
    }

    @Test func stopsReadingWhileARequestIsHandled() async throws {
        let started = Gate()
        let release = Gate()
        try await withServer(routes: { router in
            router.add("GET", "/block") { _, _ in
                started.open()
                await release.wait()
                return HTTPResponse(status: 200)
            }
        }) { _, port in
            let client = try RawClient.connect(port: port)
            try await client.send(request("GET", "/block"))
            await started.wait()
            // Pipeline without reading: with the server not reading, the socket buffers fill up
            // and the kernel refuses more, instead of the server buffering it all.
            let filler = Array(String(repeating: request("GET", "/hello"), count: 1000).utf8)
            var accepted = 0
            var refused = false
            while accepted < 256 * 1024 * 1024 {
                let sent = client.sendWithoutBlocking(filler)
                if sent == 0 { refused = true; break }
                accepted += sent
            }
            #expect(refused)
            release.open()
            #expect(try await client.readResponse().status == 200)
            #expect(try await client.readResponse().status == 200)
        }
    }
}
