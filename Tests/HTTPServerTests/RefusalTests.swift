@testable import HTTPServer
import Foundation
import Testing

/// The server's own refusals, over real sockets: each is problem+json, says
/// `Connection: close`, and the server then closes the connection.
@Suite struct RefusalTests {
    private func expectRefusal(
        _ bytes: String,
        status: Int,
        configure: (inout HTTPServerConfiguration) -> Void = { _ in },
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        try await withServer(configure: configure) { _, port in
            let client = try RawClient.connect(port: port)
            try await client.send(bytes)
            let response = try await client.readResponse()
            #expect(response.status == status, sourceLocation: sourceLocation)
            #expect(response.header("Content-Type") == "application/problem+json", sourceLocation: sourceLocation)
            #expect(response.header("Connection") == "close", sourceLocation: sourceLocation)
            let problem = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
            #expect(problem["status"] as? Int == status, sourceLocation: sourceLocation)
            #expect(problem["type"] as? String == "about:blank", sourceLocation: sourceLocation)
            #expect(problem["title"] is String && problem["detail"] is String, sourceLocation: sourceLocation)
            #expect(await client.isClosedByServer(), sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: RequestParserTests.badFraming.keys.sorted())
    func badFramingIs400AndCloses(_ name: String) async throws {
        try await expectRefusal(RequestParserTests.badFraming[name] ?? "", status: 400)
    }

    @Test func overlongRequestLineIs414() async throws {
        try await expectRefusal("GET /" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\nHost: h\r\n\r\n", status: 414)
    }

    @Test func overlongRequestLineIs414BeforeItEnds() async throws {
        try await expectRefusal("GET /" + String(repeating: "a", count: 9000), status: 414)
    }

    @Test func oversizedHeaderSectionIs431() async throws {
        let big = (0..<70).map { "X-Filler-\($0): " + String(repeating: "v", count: 1000) }
        try await expectRefusal(request("GET", "/hello", headers: big), status: 431)
    }

    @Test func tooManyHeaderFieldsIs431() async throws {
        try await expectRefusal(request("GET", "/hello", headers: (0..<101).map { "X-\($0): v" }), status: 431)
    }

    @Test func declaredTooLargeBodyIs413WithoutReadingIt() async throws {
        try await expectRefusal("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 2000\r\n\r\n", status: 413) {
            $0.maxBodyBytes = 1000
        }
    }

    @Test func chunkedBodyOverTheLimitIs413() async throws {
        let chunks = String(repeating: "100\r\n" + String(repeating: "x", count: 256) + "\r\n", count: 5)
        try await expectRefusal("POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks, status: 413) {
            $0.maxBodyBytes = 1000
        }
    }

    @Test func unsupportedVersionIs400() async throws {
        try await expectRefusal("GET /hello HTTP/2.0\r\nHost: h\r\n\r\n", status: 400)
    }

    @Test func unknownExpectationIs417() async throws {
        try await expectRefusal(request("POST", "/echo", headers: ["Expect: teapot"], body: "x"), status: 417)
    }

    @Test func tooLargeBodyWithExpectContinueIs413WithoutContinue() async throws {
        // readResponse returns the first response; a 100 would fail the status check.
        try await expectRefusal("POST /echo HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2000\r\n\r\n", status: 413) {
            $0.maxBodyBytes = 1000
        }
    }

    @Test func unknownPathIs404AndMethodIs405WithAllow() async throws {
        try await withServer { _, port in
            let client = try RawClient.connect(port: port)
            try await client.send(request("GET", "/missing"))
            let missing = try await client.readResponse()
            #expect(missing.status == 404)
            #expect(missing.header("Content-Type") == "application/problem+json")
            try await client.send(request("BREW", "/hello"))
            let brew = try await client.readResponse()
            #expect(brew.status == 405)
            #expect(brew.header("Allow") == "GET, HEAD")
            // Router answers keep the connection.
            try await client.send(request("GET", "/hello"))
            #expect(try await client.readResponse().status == 200)
        }
    }
}
