@testable import HTTPServer
import Foundation
import Testing

@Suite struct ValueTypeTests {
    @Test func headersKeepOrderAndMatchNamesCaseInsensitively() {
        var headers = HTTPHeaders([("Accept", "a"), ("X-Multi", "1")])
        headers.add("x-multi", "2")
        #expect(headers["ACCEPT"] == "a")
        #expect(headers["x-MULTI"] == "1")
        #expect(headers.values("X-Multi") == ["1", "2"])
        #expect(headers["missing"] == nil)
        headers.set("X-MULTI", "3")
        #expect(headers.values("x-multi") == ["3"])
        #expect(headers.map(\.name) == ["Accept", "X-MULTI"])
    }

    @Test func requestDerivesPathAndQueryFromTheTarget() {
        let request = HTTPRequest(method: "GET", target: "/a%2Fb/c%20d?q=a+b%2B&empty&x=1&x=2&bad=%zz")
        #expect(request.path == "/a/b/c d")
        #expect(request.query == ["q": "a b+", "empty": "", "x": "2", "bad": "%zz"])
        #expect(HTTPRequest(method: "GET", target: "http://h:1/p?x=1").path == "/p")
        #expect(HTTPRequest(method: "GET", target: "http://h:1").path == "/")
        #expect(HTTPRequest(method: "GET", target: "/").query.isEmpty)
    }

    @Test func problemIsRFC9457JSONWithEscaping() throws {
        let response = HTTPResponse.problem(422, title: "Bad \"thing\"", detail: "line\nbreak \\ tab\t \u{01} é ✓",
                                            errors: [(field: "url", message: "must be \"http\"")])
        #expect(response.status == 422)
        #expect(response.headers["Content-Type"] == "application/problem+json")
        guard case .bytes(let bytes) = response.body else { Issue.record("not bytes"); return }
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(object["type"] as? String == "about:blank")
        #expect(object["title"] as? String == "Bad \"thing\"")
        #expect(object["status"] as? Int == 422)
        #expect(object["detail"] as? String == "line\nbreak \\ tab\t \u{01} é ✓")
        let errors = try #require(object["errors"] as? [[String: String]])
        #expect(errors == [["field": "url", "message": "must be \"http\""]])
    }

    @Test func problemOmitsAnEmptyErrorsArray() {
        let response = HTTPResponse.problem(404, title: "Not Found", detail: "x")
        guard case .bytes(let bytes) = response.body else { Issue.record("not bytes"); return }
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"type":"about:blank","title":"Not Found","status":404,"detail":"x"}"#)
    }

    @Test func jsonSetsTheContentType() {
        let response = HTTPResponse.json(201, Array("{}".utf8), headers: HTTPHeaders([("Content-Type", "text/plain"), ("Location", "/x")]))
        #expect(response.headers.values("Content-Type") == ["application/json"])
        #expect(response.headers["Location"] == "/x")
    }

    @Test func responseHeadReplacesFramingHeadersAndDropsInjectedLines() {
        var bytes: [UInt8] = []
        let headers = HTTPHeaders([
            ("Content-Length", "999"), ("Connection", "keep-alive"), ("X-Ok", "fine"),
            ("X-Evil", "a\r\nSet-Cookie: x"), ("Bad Name", "v"),
        ])
        appendResponseHead(status: 200, headers: headers, framing: .length(2), connection: "close",
                           server: ServerFields(date: "Sun, 06 Nov 1994 08:49:37 GMT"), to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self)
            == "HTTP/1.1 200 OK\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nX-Ok: fine\r\nCache-Control: no-store\r\n"
            + "Content-Length: 2\r\nConnection: close\r\n\r\n")
    }
}
