@testable import DownloadService
import HTTPServer
import Testing

/// The console's static files and the DNS-rebinding Host check, below the HTTP server (the
/// browser and the wire are tested in Tests/e2e/test_console.py).
@Suite struct ConsoleTests {
    private func request(host: String?, version: String = "HTTP/1.1", ifNoneMatch: String? = nil) -> HTTPRequest {
        var headers = HTTPHeaders()
        if let host { headers.set("Host", host) }
        if let ifNoneMatch { headers.set("If-None-Match", ifNoneMatch) }
        return HTTPRequest(method: "GET", target: "/ui/", version: version, headers: headers)
    }

    @Test(arguments: ["localhost", "LOCALHOST:8080", "127.0.0.1", "127.0.0.1:1", "127.9.8.7:80", "[::1]", "[::1]:8080", "fetchd.lan:9", "Fetchd.LAN"])
    func servesLoopbackAndAllowedHosts(host: String) {
        let check = HostCheck(allowedHosts: ["fetchd.lan"], loopbackListener: true, tokensSet: { false })
        #expect(check.refusal(for: request(host: host)) == nil)
    }

    @Test(arguments: ["evil.example", "evil.example:8080", "localhost.evil.example", "127.0.0.1.evil.example", "[::2]", "128.0.0.1", "fetchd.lan.evil"])
    func refusesForeignHosts(host: String) {
        let check = HostCheck(allowedHosts: ["fetchd.lan"], loopbackListener: true, tokensSet: { false })
        #expect(check.refusal(for: request(host: host))?.status == 421)
    }

    @Test func servesAnyHostWithTokensOrOffLoopbackAndHTTP10WithoutHost() {
        let foreign = request(host: "evil.example")
        #expect(HostCheck(allowedHosts: [], loopbackListener: true, tokensSet: { true }).refusal(for: foreign) == nil)
        #expect(HostCheck(allowedHosts: [], loopbackListener: false, tokensSet: { false }).refusal(for: foreign) == nil)
        let check = HostCheck(allowedHosts: [], loopbackListener: true, tokensSet: { false })
        #expect(check.refusal(for: request(host: nil, version: "HTTP/1.0")) == nil)
    }

    @Test(arguments: ["fetchd.lan", "[fd00::1]", "10.0.0.2", "my_host"])
    func acceptsAllowedHostSettings(item: String) {
        #expect(HostCheck.isValidAllowedHost(item))
    }

    @Test(arguments: ["fetchd.lan:8080", "http://fetchd.lan", "a/b", "[zz]", "ünïcode"])
    func rejectsAllowedHostSettings(item: String) {
        #expect(!HostCheck.isValidAllowedHost(item))
    }

    @Test func servesFilesWithAStrongETagAndAnswers304() throws {
        let console = ConsoleAPI()
        let page = try console.serve("", request(host: "localhost"))
        #expect(page.status == 200)
        #expect(page.headers["Content-Type"] == "text/html; charset=utf-8")
        #expect(page.headers["Content-Security-Policy"] == "default-src 'self'")
        let etag = try #require(page.headers["ETag"])
        #expect(etag.hasPrefix("\"") && etag.hasSuffix("\""))
        for condition in [etag, "W/" + etag, "\"other\", " + etag, "*"] {
            #expect(try console.serve("index.html", request(host: "localhost", ifNoneMatch: condition)).status == 304)
        }
        #expect(try console.serve("", request(host: "localhost", ifNoneMatch: "\"other\"")).status == 200)
        #expect(try console.serve("console.js", request(host: "localhost")).headers["ETag"] != etag)
        #expect(throws: APIProblem.self) { try console.serve("missing.js", request(host: "localhost")) }
    }
}
