import DownloadCore
import Testing

/// `HTTPURL.parse` reads bytes; these pin what it accepts and refuses.
@Suite struct HTTPURLTests {
    @Test(arguments: [
        ("http://example.com/file", HTTPURL(scheme: "http", host: "example.com", port: 80)),
        ("HTTPS://Example.COM:8443/a?b#c", HTTPURL(scheme: "https", host: "example.com", port: 8443)),
        ("http://user:pass@host.test:81/", HTTPURL(scheme: "http", host: "host.test", port: 81)),
        ("http://a@b@host.test/", HTTPURL(scheme: "http", host: "host.test", port: 80)),
        ("https://[::1]:9000/x", HTTPURL(scheme: "https", host: "::1", port: 9000)),
        ("https://[FE80::1]/x", HTTPURL(scheme: "https", host: "fe80::1", port: 443)),
        ("http://host.test:/x", HTTPURL(scheme: "http", host: "host.test", port: 80)),
        ("http://host.test?q", HTTPURL(scheme: "http", host: "host.test", port: 80)),
    ])
    func parses(text: String, expected: HTTPURL) {
        #expect(HTTPURL.parse(text) == .success(expected))
    }

    @Test(arguments: [
        ("example.com/file", HTTPURL.Problem.notAbsolute),
        ("1http://host/", .notAbsolute),
        ("ht_tp://host/", .notAbsolute),
        ("http:host/", .notAbsolute),
        ("ftp://host/", .unsupportedScheme("ftp")),
        ("FTP://host/", .unsupportedScheme("ftp")),
        ("http:///path", .missingHost),
        ("http://user@/path", .missingHost),
        ("http://[::1/x", .missingHost),
        ("http://[::1]x/", .invalidPort),
        ("http://host:0/", .invalidPort),
        ("http://host:65536/", .invalidPort),
        ("http://host:123456/", .invalidPort),
        ("http://host:8a/", .invalidPort),
        ("http://host/a b", .invalidCharacter),
        ("http://hóst/", .invalidCharacter),
        ("http://host/\u{7F}", .invalidCharacter),
    ])
    func refuses(text: String, problem: HTTPURL.Problem) {
        #expect(HTTPURL.parse(text) == .failure(problem))
    }

    @Test func refusesWhatIsTooLong() {
        #expect(HTTPURL.parse("http://host/" + String(repeating: "a", count: HTTPURL.maxLength)) == .failure(.tooLong))
    }
}
