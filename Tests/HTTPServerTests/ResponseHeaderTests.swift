import Glibc
@testable import HTTPServer
import Testing

/// The fields the server adds to every response: `Date`, `Cache-Control`, `X-Accel-Buffering`
/// on streams, and gzip with `Vary` for large JSON.
@Suite struct ResponseHeaderTests {
    /// A JSON array of `count` job-like objects (about 100 bytes each).
    private static func jsonList(_ count: Int) -> [UInt8] {
        let item = #"{"id":"01JD4Q7M2X8T9V3K5N6P7R8S9T","state":"queued","url":"https://example.com/big.iso"}"#
        return Array(("[" + Array(repeating: item, count: count).joined(separator: ",") + "]").utf8)
    }

    private static func routes(_ router: inout Router) {
        router.add("GET", "/list") { _, _ in .json(200, jsonList(200)) }
        router.add("GET", "/small") { _, _ in .json(200, jsonList(2)) }
        router.add("GET", "/cached") { _, _ in
            .json(200, jsonList(200), headers: HTTPHeaders([("Cache-Control", "max-age=60"), ("Date", "yesterday")]))
        }
        router.add("GET", "/binary") { _, _ in
            HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "application/octet-stream")]), body: .bytes(jsonList(200)))
        }
        router.add("GET", "/events") { _, _ in
            HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "text/event-stream")]), body: .stream(AsyncStream {
                $0.yield(Array("data: 1\n\n".utf8))
                $0.finish()
            }))
        }
    }

    private static func get(_ port: Int, _ target: String, _ headers: [String] = [], method: String = "GET") async throws -> RawResponse {
        let client = try RawClient.connect(port: port)
        try await client.send(request(method, target, headers: headers))
        return try await client.readResponse(head: method == "HEAD")
    }

    @Test func imfFixdateFormat() {
        #expect(HTTPDateCache.format(secondsSinceEpoch: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDateCache.format(secondsSinceEpoch: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDateCache.format(secondsSinceEpoch: 1_795_255_200) == "Sat, 21 Nov 2026 10:00:00 GMT")
    }

    @Test func everyResponseHasTheCurrentDate() async throws {
        try await withServer(configure: { $0.maxConnections = 1 }, routes: Self.routes) { _, port in
            let before = time(nil)
            let busyHolder = try RawClient.connect(port: port)
            try await busyHolder.send(request("GET", "/small"))
            var responses = [try await busyHolder.readResponse()]
            // Beyond maxConnections: the server's own 503, written without a handler.
            responses.append(try await RawClient.connect(port: port).readResponse())
            try await busyHolder.send(request("GET", "/missing") + request("DELETE", "/small") + "GET /bad\u{1}path HTTP/1.1\r\n\r\n")
            for _ in 0..<3 { responses.append(try await busyHolder.readResponse()) }
            #expect(responses.map(\.status) == [200, 503, 404, 405, 400])
            // The seconds the exchanges took (one more each side: the server reads a coarser clock).
            let during = (before - 1...time(nil) + 1).map { HTTPDateCache.format(secondsSinceEpoch: $0) }
            for response in responses {
                #expect(response.header("Date").map(during.contains) == true, "\(response.status): \(response.headers)")
            }
        }
    }

    @Test func responsesAreNotStoredByCachesUnlessTheHandlerSaysSo() async throws {
        try await withServer(routes: Self.routes) { _, port in
            let fresh = try await Self.get(port, "/small")
            #expect(fresh.header("Cache-Control") == "no-store")
            let cached = try await Self.get(port, "/cached")
            #expect(cached.headers.filter { $0.name == "Cache-Control" }.map(\.value) == ["max-age=60"])
            #expect(cached.headers.filter { $0.name == "Date" }.count == 1)
            #expect(cached.header("Date") != "yesterday")
        }
    }

    @Test func streamsTellProxiesNotToBuffer() async throws {
        try await withServer(routes: Self.routes) { _, port in
            let events = try await Self.get(port, "/events")
            #expect(events.header("X-Accel-Buffering") == "no")
            #expect(events.header("Content-Encoding") == nil)
            #expect(try await Self.get(port, "/small").header("X-Accel-Buffering") == nil)
        }
    }

    @Test func largeJSONIsGzippedForClientsThatAcceptIt() async throws {
        try await withServer(routes: Self.routes) { _, port in
            let plain = try await Self.get(port, "/list")
            #expect(plain.header("Content-Encoding") == nil)
            #expect(plain.header("Vary") == "Accept-Encoding")
            #expect(plain.body == Self.jsonList(200))

            for acceptEncoding in ["gzip", "deflate, gzip;q=0.5", "br;q=1.0, *", "X-GZIP"] {
                let gzipped = try await Self.get(port, "/list", ["Accept-Encoding: \(acceptEncoding)"])
                #expect(gzipped.header("Content-Encoding") == "gzip", "\(acceptEncoding)")
                #expect(gzipped.header("Vary") == "Accept-Encoding")
                #expect(gzipped.body.count < plain.body.count / 5)
                #expect(gunzip(gzipped.body) == plain.body)
            }
            let head = try await Self.get(port, "/list", ["Accept-Encoding: gzip"], method: "HEAD")
            let get = try await Self.get(port, "/list", ["Accept-Encoding: gzip"])
            #expect(head.header("Content-Length") == String(get.body.count))
        }
    }

    @Test func identityWhenGzipIsRefusedTheBodyIsSmallOrNotText() async throws {
        try await withServer(routes: Self.routes) { _, port in
            for acceptEncoding in ["gzip;q=0", "gzip; q=0.000, *", "*;q=0", "deflate, br", "identity"] {
                let response = try await Self.get(port, "/list", ["Accept-Encoding: \(acceptEncoding)"])
                #expect(response.header("Content-Encoding") == nil, "\(acceptEncoding)")
                #expect(response.body == Self.jsonList(200))
            }
            let small = try await Self.get(port, "/small", ["Accept-Encoding: gzip"])
            #expect(small.header("Content-Encoding") == nil)
            #expect(small.header("Vary") == nil)
            let binary = try await Self.get(port, "/binary", ["Accept-Encoding: gzip"])
            #expect(binary.header("Content-Encoding") == nil)
            #expect(binary.header("Vary") == nil)
        }
    }

    @Test(arguments: [
        ("gzip", true), ("GZip;q=1", true), ("x-gzip", true), ("deflate,gzip", true), ("*", true), ("*;q=0.1", true),
        ("gzip;q=0", false), ("gzip;Q=0.0", false), ("*, gzip;q=0", false), ("*;q=0", false), ("", false),
        ("identity", false), ("gzip;q=0.001", true),
    ])
    func acceptEncodingParsing(value: String, accepts: Bool) {
        #expect(ResponseCompression.acceptsGzip(value) == accepts)
    }
}
