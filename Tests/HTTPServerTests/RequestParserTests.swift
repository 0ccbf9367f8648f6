@testable import HTTPServer
import Testing
import TestSupport

/// Drives a parser the way a connection does, recording what it asks for.
private struct Harness {
    var parser: RequestParser
    var requests: [(request: HTTPRequest, keepAlive: Bool)] = []
    var continues = 0
    var rejection: RequestRejection?

    init(_ configure: (inout HTTPServerConfiguration) -> Void = { _ in }) {
        var configuration = HTTPServerConfiguration()
        configure(&configuration)
        parser = RequestParser(configuration: configuration, remoteAddress: "192.0.2.1:1234")
    }

    mutating func feed(_ text: String, byteAtATime: Bool = false) {
        feed(Array(text.utf8), byteAtATime: byteAtATime)
    }

    mutating func feed(_ bytes: [UInt8], byteAtATime: Bool = false) {
        let pieces = byteAtATime ? bytes.map { [$0] } : [bytes]
        for piece in pieces {
            piece.withUnsafeBytes { parser.append($0) }
            drain()
        }
    }

    private mutating func drain() {
        while rejection == nil {
            switch parser.next() {
            case .needMore: return
            case .sendContinue: continues += 1
            case .request(let request, let keepAlive): requests.append((request, keepAlive))
            case .reject(let reason): rejection = reason
            }
        }
    }
}

private func rejection(of text: String, _ configure: (inout HTTPServerConfiguration) -> Void = { _ in }) -> Int? {
    var harness = Harness(configure)
    harness.feed(text)
    return harness.rejection?.status
}

@Suite struct RequestParserTests {
    @Test func parsesARequestFedOneByteAtATime() throws {
        var harness = Harness()
        harness.feed("POST /downloads/a%20b?state=queued&x=1+2&x=3 HTTP/1.1\r\nHost: h\r\nX-A:  v  \r\nContent-Length: 5\r\n\r\nhello", byteAtATime: true)
        #expect(harness.rejection == nil)
        let request = try #require(harness.requests.first?.request)
        #expect(request.method == "POST")
        #expect(request.target == "/downloads/a%20b?state=queued&x=1+2&x=3")
        #expect(request.path == "/downloads/a b")
        #expect(request.query == ["state": "queued", "x": "3"])
        #expect(request.version == "HTTP/1.1")
        #expect(request.headers["x-a"] == "v")
        #expect(request.body == Array("hello".utf8))
        #expect(request.remoteAddress == "192.0.2.1:1234")
        #expect(harness.requests.first?.keepAlive == true)
        #expect(harness.parser.phase == .idle)
    }

    @Test func splitsPipelinedRequestsInOrder() {
        var harness = Harness()
        harness.feed(request("GET", "/1") + request("POST", "/2", body: "xy") + request("GET", "/3"))
        #expect(harness.requests.map(\.request.path) == ["/1", "/2", "/3"])
        #expect(harness.requests[1].request.body == Array("xy".utf8))
    }

    @Test func reportsPhasesForDeadlines() {
        var harness = Harness()
        #expect(harness.parser.phase == .idle)
        harness.feed("GET / HT")
        #expect(harness.parser.phase == .head)
        harness.feed("TP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\na")
        #expect(harness.parser.phase == .body)
        harness.feed("bc")
        #expect(harness.parser.phase == .idle)
        #expect(harness.requests.count == 1)
    }

    @Test func ignoresEmptyLinesBeforeTheRequestLineAndAcceptsBareLF() {
        var harness = Harness()
        harness.feed("\r\n\nGET /a HTTP/1.1\nHost: h\n\n")
        #expect(harness.requests.first?.request.path == "/a")
    }

    @Test func decodesChunkedBodiesWithExtensionsAndTrailers() {
        var harness = Harness()
        let chunked = "POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;name=value;flag\r\nhello\r\n1 ; ext=\"q\"\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\nY: z\r\n\r\n"
        harness.feed(chunked, byteAtATime: true)
        #expect(harness.rejection == nil)
        #expect(harness.requests.first.map { String(decoding: $0.request.body, as: UTF8.self) } == "hello 0123456789")
        #expect(harness.requests.first?.request.headers["X-Trailer"] == nil)
    }

    @Test func keepAliveFollowsVersionAndConnectionHeader() {
        var harness = Harness()
        harness.feed("GET / HTTP/1.1\r\nHost: h\r\nConnection: Close\r\n\r\n")
        harness.feed("GET / HTTP/1.0\r\n\r\n")
        harness.feed("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        harness.feed("GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, Upgrade\r\n\r\n")
        #expect(harness.requests.map(\.keepAlive) == [false, false, true, true])
    }

    @Test func treatsAHigherMinorVersionAsHTTP11() {
        var harness = Harness()
        harness.feed("GET / HTTP/1.7\r\nHost: h\r\n\r\n")
        #expect(harness.requests.first?.request.version == "HTTP/1.1")
    }

    @Test func acceptsIdenticalDuplicateContentLengths() {
        var harness = Harness()
        harness.feed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nContent-Length: 2, 2\r\n\r\nok")
        #expect(harness.requests.first?.request.body == Array("ok".utf8))
    }

    @Test func asksForContinueOnlyWhenTheBodyIsStillToCome() {
        var waiting = Harness()
        waiting.feed("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
        #expect(waiting.continues == 1)
        waiting.feed("ok")
        #expect(waiting.requests.count == 1)

        var eager = Harness()
        eager.feed("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok")
        #expect(eager.continues == 0)
        #expect(eager.requests.count == 1)

        var bodiless = Harness()
        bodiless.feed("GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n")
        #expect(bodiless.continues == 0)
        #expect(bodiless.requests.count == 1)

        var http10 = Harness()
        http10.feed("POST / HTTP/1.0\r\nExpect: something\r\nContent-Length: 2\r\n\r\nok")
        #expect(http10.continues == 0)
        #expect(http10.requests.count == 1)
    }

    @Test func refusesTooLargeBodiesBeforeContinuing() {
        var harness = Harness { $0.maxBodyBytes = 10 }
        harness.feed("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 11\r\n\r\n")
        #expect(harness.continues == 0)
        #expect(harness.rejection?.status == 413)
    }

    @Test func enforcesSizeLimitsBeforeTheLineEnds() {
        #expect(rejection(of: "GET /" + String(repeating: "a", count: 100)) { $0.maxRequestLineBytes = 50 } == 414)
        #expect(rejection(of: "GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 100)) { $0.maxHeaderBytes = 50 } == 431)
        #expect(rejection(of: request("GET", "/", headers: (1...5).map { "X-\($0): v" })) { $0.maxHeaderCount = 5 } == 431)
        #expect(rejection(of: request("GET", "/", headers: (1...4).map { "X-\($0): v" })) { $0.maxHeaderCount = 5 } == nil)
    }

    @Test func acceptsARequestLineExactlyAtTheLimit() {
        let line = "GET /" + String(repeating: "a", count: 36) + " HTTP/1.1"
        #expect(line.utf8.count == 50)
        #expect(rejection(of: line + "\r\nHost: h\r\n\r\n") { $0.maxRequestLineBytes = 50 } == nil)
        #expect(rejection(of: "GET /a" + line.dropFirst(5) + "\r\nHost: h\r\n\r\n") { $0.maxRequestLineBytes = 50 } == 414)
    }

    @Test func enforcesTheBodyLimitWhileDecodingChunks() {
        let head = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        #expect(rejection(of: head + "6\r\nabcdef\r\n5\r\n") { $0.maxBodyBytes = 10 } == 413)
        #expect(rejection(of: head + "6\r\nabcdef\r\n4\r\nabcd\r\n0\r\n\r\n") { $0.maxBodyBytes = 10 } == nil)
    }

    /// Requests the parser must refuse with 400, by what is wrong with them.
    static let badFraming: [String: String] = [
        "both Content-Length and Transfer-Encoding": "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        "differing Content-Lengths": "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "invalid Content-Length": "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\n",
        "Content-Length overflow": "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        "Transfer-Encoding not ending in chunked": "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        "unknown transfer coding": "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "whitespace before colon": "GET / HTTP/1.1\r\nHost: h\r\nX-A : v\r\n\r\n",
        "obs-fold": "GET / HTTP/1.1\r\nHost: h\r\nX-A: v\r\n w\r\n\r\n",
        "bare CR in a value": "GET / HTTP/1.1\r\nHost: h\r\nX-A: v\rw\r\n\r\n",
        "bare CR in the request line": "GET /\r HTTP/1.1\r\nHost: h\r\n\r\n",
        "missing Host": "GET / HTTP/1.1\r\n\r\n",
        "two Hosts": "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        "malformed request line": "GET /\r\nHost: h\r\n\r\n",
        "double space in request line": "GET  / HTTP/1.1\r\nHost: h\r\n\r\n",
        "bad version syntax": "GET / HTTP/1.1.1\r\nHost: h\r\n\r\n",
        "relative target": "GET downloads HTTP/1.1\r\nHost: h\r\n\r\n",
        "control character in value": "GET / HTTP/1.1\r\nHost: h\r\nX-A: a\u{01}b\r\n\r\n",
        "invalid chunk size": "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "chunk size overflow": "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1ffffffffffffffff\r\n",
        "chunk data longer than its size": "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
        "Transfer-Encoding in HTTP/1.0": "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
    ]

    @Test(arguments: badFraming.keys.sorted())
    func refusesBadFramingWith400(_ name: String) {
        #expect(rejection(of: Self.badFraming[name] ?? "") == 400)
    }

    @Test func refusesUnsupportedVersionsWith400() {
        #expect(rejection(of: "GET / HTTP/2.0\r\nHost: h\r\n\r\n") == 400)
        #expect(rejection(of: "GET / HTTP/0.9\r\n\r\n") == 400)
    }

    @Test func refusesUnknownExpectationsWith417() {
        #expect(rejection(of: "POST / HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\nContent-Length: 1\r\n\r\nx") == 417)
    }

    @Test func stopsAfterARejection() {
        var harness = Harness()
        harness.feed("GET / HTTP/1.1\r\n\r\n" + request("GET", "/next"))
        #expect(harness.rejection?.status == 400)
        #expect(harness.requests.isEmpty)
        #expect(harness.parser.next().isNeedMore)
    }

    /// Random bytes after a valid start must never crash the parser, and every refusal is a
    /// 4xx (the contract allows no 5xx but 503).
    @Test func survivesRandomInput() {
        var generator = SplitMix64(seed: 42)
        let alphabet = Array("GET POST / HTTP/1.1\r\n:Host;chunked Transfer-Encoding Content-Length 0123456789abcdef\t \u{0}\u{7f}".utf8)
        for _ in 0..<2000 {
            var harness = Harness { $0.maxBodyBytes = 1000 }
            let prefix = generator.next() % 2 == 0 ? Array("POST / HTTP/1.1\r\nHost: h\r\n".utf8) : []
            let noise = (0..<Int(generator.next() % 200)).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }
            harness.feed(prefix + noise, byteAtATime: generator.next() % 2 == 0)
            if let status = harness.rejection?.status {
                #expect((400..<500).contains(status))
            }
        }
    }
}

extension RequestParser.Action {
    var isNeedMore: Bool {
        if case .needMore = self { return true }
        return false
    }
}
