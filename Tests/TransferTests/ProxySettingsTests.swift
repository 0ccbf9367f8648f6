import CCurl
import Testing
@testable import Transfer

/// FETCHD_PROXY and FETCHD_NO_PROXY as written, how a hop is routed, and which curl failures
/// are the proxy's or TLS refusals.
@Suite struct ProxySettingsTests {
    @Test(arguments: [
        ("http://proxy.corp:3128", ProxySettings.Kind.http, "http://proxy.corp:3128"),
        ("HTTPS://proxy.corp:443/", .https, "https://proxy.corp:443"),
        ("socks5://alice:s3cret@10.0.0.1:1080", .socks5, "socks5://10.0.0.1:1080"),
        ("socks5h://a%40b:p%3Aw@[::1]:1080", .socks5h, "socks5h://[::1]:1080"),
    ])
    func aProxyURLIsReadAndItsCredentialsAreLeftOutOfTheRedactedForm(_ text: String, _ kind: ProxySettings.Kind,
                                                                      _ redacted: String) throws {
        let proxy = try ProxySettings(url: text, noProxy: [])
        #expect(proxy.kind == kind)
        #expect(proxy.redacted == redacted)
        #expect(proxy.url == text)
    }

    @Test(arguments: ["proxy.corp:3128", "ftp://proxy:21", "socks4://h:1", "http://proxy.corp",
                      "http://alice:s3cret@proxy.corp", "http://h:0", "http://h:70000", "http://:8080",
                      "http://h:8080/path", "http://[::1]"])
    func aBadProxyURLIsRefusedWithoutEchoingIt(_ text: String) {
        #expect(throws: ProxySettings.Invalid.self) { try ProxySettings(url: text, noProxy: []) }
        do {
            _ = try ProxySettings(url: text, noProxy: [])
        } catch {
            #expect(!error.reason.contains("s3cret"))
        }
    }

    @Test func noProxyMatchesHostsDomainsAndNetworks() throws {
        let proxy = try ProxySettings(url: "http://p:1", noProxy: ["internal.corp", ".example.com", "10.0.0.0/8", "::1"])
        for host in ["internal.corp", "a.internal.corp", "example.com", "x.y.example.com", "EXAMPLE.com",
                     "10.1.2.3", "[::1]"] {
            #expect(proxy.isBypassed(host: host), "\(host)")
        }
        for host in ["notinternal.corp", "example.org", "11.0.0.1", "8.8.8.8", "[::2]", "com"] {
            #expect(!proxy.isBypassed(host: host), "\(host)")
        }
        #expect(try ProxySettings(url: "http://p:1", noProxy: ["*"]).isBypassed(host: "anything.at.all"))
        #expect(throws: ProxySettings.Invalid.self) { try ProxySettings(url: "http://p:1", noProxy: ["a/b"]) }
    }

    // MARK: - Routing a hop

    private let policy = AddressPolicy.publicOnly

    @Test func aLiteralAddressIsJudgedAsItStands() throws {
        let proxy = try ProxySettings(url: "http://127.0.0.1:3128", noProxy: [])
        #expect(ProxyRouting.route("http://127.0.0.1/x", proxy: proxy, policy: policy) == .failure(.blockedAddress("127.0.0.1")))
        #expect(ProxyRouting.route("https://[::1]:8443/", proxy: proxy, policy: policy) == .failure(.blockedAddress("::1")))
        #expect(ProxyRouting.route("http://8.8.8.8/x", proxy: proxy, policy: policy) == .success(HopRoute(proxy: .http)))
        #expect(ProxyRouting.route("http://127.0.0.1/x", proxy: proxy, policy: .allowAll) == .success(HopRoute(proxy: .http)))
    }

    @Test func aNameWithABlockedAddressIsRefusedThroughEveryKindOfProxy() throws {
        for kind in ProxySettings.Kind.allCases {
            let proxy = try ProxySettings(url: "\(kind.rawValue)://127.0.0.1:1080", noProxy: [])
            guard case .failure(.blockedAddress(let address)) = ProxyRouting.route("http://localhost:8080/", proxy: proxy, policy: policy)
            else {
                Issue.record("localhost through \(kind) was not refused")
                continue
            }
            #expect(address.contains("localhost"))
        }
    }

    @Test func socks5PinsAnAddressFetchdChecked() throws {
        let proxy = try ProxySettings(url: "socks5://127.0.0.1:1080", noProxy: [])
        let allowLoopback = AddressPolicy(allowPrivate: false, allowedNetworks: [try #require(CIDR("127.0.0.0/8"))])
        let route = ProxyRouting.route("http://localhost:8080/", proxy: proxy, policy: allowLoopback)
        // ::1, if localhost has it, is not allowed, so only 127.0.0.1 is handed to curl.
        #expect(route == .success(HopRoute(proxy: .socks5, connectTo: "localhost:8080:127.0.0.1:8080")))
    }

    @Test func aBypassedHostGoesDirectAndIsJudgedAtConnectTime() throws {
        let proxy = try ProxySettings(url: "http://127.0.0.1:3128", noProxy: ["localhost"])
        #expect(ProxyRouting.route("http://localhost/x", proxy: proxy, policy: policy) == .success(HopRoute(proxy: nil)))
    }

    // MARK: - Failures

    @Test func connectingThroughTheProxyFailsAsProxy() {
        let attempt = ProxyAttempt(connectStatus: 0)
        #expect(TransferFailure(curlCode: CURLE_COULDNT_CONNECT, message: "m", refusedAddress: nil, proxy: attempt) == .proxy("m"))
        #expect(TransferFailure(curlCode: CURLE_PROXY, message: "m", refusedAddress: nil, proxy: attempt) == .proxy("m"))
        #expect(TransferFailure(curlCode: CURLE_RECV_ERROR, message: "m", refusedAddress: nil,
                                proxy: ProxyAttempt(connectStatus: 502)) == .proxy("m"))
        // Without a proxy the origin itself could not be reached.
        #expect(TransferFailure(curlCode: CURLE_COULDNT_CONNECT, message: "m", refusedAddress: nil) == .unreachable("m"))
    }

    @Test func refusedCertificatesAndHandshakesAreTLSButACutHandshakeIsNot() {
        let refused: [(CURLcode, String)] = [
            (CURLE_PEER_FAILED_VERIFICATION, "SSL certificate problem: unable to get local issuer certificate"),
            (CURLE_SSL_CONNECT_ERROR, "OpenSSL/3.0.19: error:0A000410:SSL routines::sslv3 alert handshake failure"),
            (CURLE_RECV_ERROR, "OpenSSL SSL_read: OpenSSL/3.0.19: error:0A00045C:SSL routines::tlsv13 alert certificate required, errno 0"),
            (CURLE_SSL_CERTPROBLEM, "could not load PEM client certificate"),
        ]
        for (code, message) in refused {
            #expect(TransferFailure(curlCode: code, message: message, refusedAddress: nil) == .tls(message), "\(message)")
        }
        let cut: [(CURLcode, String)] = [
            (CURLE_SSL_CONNECT_ERROR, "OpenSSL SSL_connect: Connection reset by peer in connection to h:443"),
            (CURLE_SSL_CONNECT_ERROR, "OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to h:443"),
            (CURLE_RECV_ERROR, "Recv failure: Connection reset by peer"),
        ]
        for (code, message) in cut {
            #expect(TransferFailure(curlCode: code, message: message, refusedAddress: nil) == .network(message), "\(message)")
        }
    }
}
