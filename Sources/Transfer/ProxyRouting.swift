import CCurl
import Glibc

/// How one hop (the request's URL, or a redirect's target) goes out while a proxy is configured.
/// Decided before curl is asked, since through a proxy curl's connections reach the proxy's
/// address, not the origin's, and the address policy can no longer judge them at connect time.
struct HopRoute: Sendable, Equatable {
    /// nil: straight to the origin (FETCHD_NO_PROXY), judged at connect time as without a proxy.
    var proxy: ProxySettings.Kind?
    /// CURLOPT_CONNECT_TO ("host:port:address:port") pinning an address fetchd checked, so that a
    /// socks5:// proxy is asked for exactly that one. A per-handle option: unlike CURLOPT_RESOLVE,
    /// it leaves nothing behind in curl's DNS cache.
    var connectTo: String?
}

/// The scheme, host and port of a URL as curl parses it.
struct URLOrigin: Equatable {
    var scheme: String
    var host: String
    var port: Int

    init?(_ url: String) {
        guard let handle = curl_url() else { return nil }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, url, 0) == CURLUE_OK,
              let scheme = Self.part(handle, CURLUPART_SCHEME, 0),
              let host = Self.part(handle, CURLUPART_HOST, 0),
              let port = Self.part(handle, CURLUPART_PORT, UInt32(CURLU_DEFAULT_PORT)).flatMap({ Int($0) })
        else { return nil }
        self.scheme = scheme.lowercased()
        self.host = host.lowercased()
        self.port = port
    }

    private static func part(_ handle: OpaquePointer, _ part: CURLUPart, _ flags: UInt32) -> String? {
        var text: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, part, &text, flags) == CURLUE_OK, let text else { return nil }
        defer { curl_free(text) }
        return String(cString: text)
    }
}

enum ProxyRouting {
    /// The route for `url`, or why it must not be requested at all. May block on name resolution:
    /// call it off the engine's queue.
    ///
    /// Through the proxy, a literal address is judged as it stands. A name is resolved here
    /// (unless every address is allowed anyway): with socks5:// curl connects the proxy to the
    /// addresses pinned here, the allowed ones; with http(s):// and socks5h:// the proxy resolves
    /// the name itself, so one blocked address among the name's refuses it. With socks5:// the
    /// proxy is handed the first allowed address.
    static func route(_ url: String, proxy: ProxySettings, policy: AddressPolicy) -> Result<HopRoute, TransferFailure> {
        guard let origin = URLOrigin(url) else { return .failure(.network("cannot parse the URL")) }
        if proxy.isBypassed(host: origin.host) { return .success(HopRoute(proxy: nil)) }
        if let literal = IPAddress(origin.host) {
            return policy.permits(literal)
                ? .success(HopRoute(proxy: proxy.kind)) : .failure(.blockedAddress(literal.description))
        }
        if policy.allowPrivate { return .success(HopRoute(proxy: proxy.kind)) }
        let addresses: [IPAddress]
        switch resolve(origin.host) {
        case .success(let resolved): addresses = resolved
        case .failure(let failure): return .failure(failure)
        }
        let blocked = addresses.filter { !policy.permits($0) }
        if proxy.proxyResolvesNames {
            if let first = blocked.first { return .failure(.blockedAddress("\(first) (\(origin.host))")) }
            return .success(HopRoute(proxy: proxy.kind))
        }
        guard let allowed = addresses.first(where: policy.permits) else {
            return .failure(.blockedAddress("\(blocked[0]) (\(origin.host))"))
        }
        let literal = allowed.isIPv4 ? allowed.description : "[\(allowed)]"
        return .success(HopRoute(proxy: proxy.kind, connectTo: "\(origin.host):\(origin.port):\(literal):\(origin.port)"))
    }

    /// Every address `host` resolves to, as the system resolver answers.
    static func resolve(_ host: String) -> Result<[IPAddress], TransferFailure> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0 else {
            return .failure(.network("could not resolve host \(host): \(String(cString: gai_strerror(status)))"))
        }
        defer { freeaddrinfo(list) }
        var addresses: [IPAddress] = []
        var entry = list
        while let current = entry {
            if let address = current.pointee.ai_addr,
               let parsed = IPAddress(socketAddress: address, length: Int(current.pointee.ai_addrlen)),
               !addresses.contains(parsed) {
                addresses.append(parsed)
            }
            entry = current.pointee.ai_next
        }
        return addresses.isEmpty ? .failure(.network("no address for host \(host)")) : .success(addresses)
    }
}
