/// The proxy every download and webhook delivery goes through (FETCHD_PROXY), and the hosts
/// reached without it (FETCHD_NO_PROXY). Proxy variables in the environment are never used.
public struct ProxySettings: Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        case http, https, socks5, socks5h
    }

    public let kind: Kind
    /// As configured, credentials included: for curl only, never for a log line or a response.
    let url: String
    /// `scheme://host:port` without credentials: what logs may show.
    public let redacted: String
    let bypass: [NoProxyEntry]

    public struct Invalid: Error, Equatable {
        public let reason: String
    }

    /// - Parameters:
    ///   - url: `http://`, `https://`, `socks5://` or `socks5h://`, optionally `user:password@`,
    ///     a host and a port.
    ///   - noProxy: host names, domains (`.example.com`, or `example.com` with its subdomains),
    ///     IP addresses and CIDR blocks reached directly; `*` alone: every host.
    public init(url: String, noProxy: [String]) throws(Invalid) {
        guard let separator = url.range(of: "://"),
              let kind = Kind(rawValue: url[..<separator.lowerBound].lowercased())
        else { throw Invalid(reason: "expected http://, https://, socks5:// or socks5h:// followed by host:port") }
        var authority = url[separator.upperBound...]
        if let slash = authority.firstIndex(of: "/") {
            guard authority[slash...] == "/" else { throw Invalid(reason: "a proxy URL has no path") }
            authority = authority[..<slash]
        }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        guard let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]"),
              let port = Int(authority[authority.index(after: colon)...]), (1...65535).contains(port),
              colon > authority.startIndex
        else { throw Invalid(reason: "expected host:port after the scheme (credentials, if any, before an @)") }
        self.kind = kind
        self.url = url
        redacted = "\(kind.rawValue)://\(authority)"
        bypass = try noProxy.map { entry throws(Invalid) in
            guard let parsed = NoProxyEntry(entry) else { throw Invalid(reason: "bad FETCHD_NO_PROXY entry '\(entry)'") }
            return parsed
        }
    }

    /// Whether a URL whose host is `host` (as curl's URL parser gives it) goes without the proxy.
    func isBypassed(host: String) -> Bool {
        let name = host.lowercased()
        let address = IPAddress(name)
        return bypass.contains { $0.matches(name: name, address: address) }
    }

    /// socks5:// hands the proxy an address curl resolved; the others hand it the name.
    var proxyResolvesNames: Bool { kind != .socks5 }
}

/// One FETCHD_NO_PROXY entry.
enum NoProxyEntry: Sendable, Equatable {
    case everyHost
    /// Matches the name and its subdomains.
    case domain(String)
    /// Matches literal addresses in URLs (names are not resolved to be compared).
    case network(CIDR)

    init?(_ text: String) {
        let entry = text.lowercased()
        if entry == "*" {
            self = .everyHost
        } else if let cidr = CIDR(entry) {
            self = .network(cidr)
        } else {
            let domain = entry.hasPrefix(".") ? String(entry.dropFirst()) : entry
            guard !domain.isEmpty, domain.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") })
            else { return nil }
            self = .domain(domain)
        }
    }

    func matches(name: String, address: IPAddress?) -> Bool {
        switch self {
        case .everyHost: return true
        case .network(let cidr): return address.map(cidr.contains) ?? false
        case .domain(let domain): return address == nil && (name == domain || name.hasSuffix("." + domain))
        }
    }
}
