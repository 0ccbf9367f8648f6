import HTTPServer

/// The defence against DNS rebinding (API.md, Console): a page on any website can make its own
/// name resolve to 127.0.0.1 and so reach a token-less fetchd on loopback. Its requests then
/// carry that website's name in `Host`, so while no tokens are set on a loopback listener only
/// loopback names and addresses (and FETCHD_ALLOWED_HOSTS) are served.
struct HostCheck: Sendable {
    /// Lowercased names from FETCHD_ALLOWED_HOSTS, without a port.
    var allowedHosts: Set<String>
    var loopbackListener: Bool
    /// Tokens can appear and go at SIGHUP, so this is asked per request.
    var tokensSet: @Sendable () -> Bool

    /// The 421 for a request this listener must not serve, or nil to serve it.
    func refusal(for request: HTTPRequest) -> HTTPResponse? {
        guard loopbackListener, !tokensSet() else { return nil }
        // The HTTP server has answered 400 already to an HTTP/1.1 request without exactly one
        // Host; an HTTP/1.0 client without one did not name any site, so it is no rebinding page.
        guard let host = request.headers["Host"] else { return nil }
        let name = Self.hostName(host)
        if Self.isLoopback(name) || allowedHosts.contains(name) { return nil }
        return .problem(421, title: "Misdirected Request",
                        detail: "this fetchd has no API tokens and listens on loopback, so it serves only Host localhost, 127.0.0.1, [::1] or a name in FETCHD_ALLOWED_HOSTS")
    }

    /// The lowercased host of a `Host` field value without its port ("[::1]:8080" → "[::1]").
    static func hostName(_ field: String) -> String {
        let lowered = field.lowercased()
        if lowered.hasPrefix("[") {
            guard let close = lowered.firstIndex(of: "]") else { return lowered }
            return String(lowered[...close])
        }
        guard let colon = lowered.firstIndex(of: ":") else { return lowered }
        return String(lowered[..<colon])
    }

    /// `localhost`, `[::1]` and every IPv4 address in 127.0.0.0/8 (a literal address cannot be
    /// rebound: a page served from it is on loopback already).
    static func isLoopback(_ name: String) -> Bool {
        if name == "localhost" || name == "localhost." || name == "[::1]" { return true }
        // Byte by byte: this runs for every request. Four octets of 1–3 digits, each ≤ 255, the first 127.
        var octets: [Int] = [0]
        var digits = 0
        for byte in name.utf8 {
            if byte == UInt8(ascii: "."), digits > 0, octets.count < 4 {
                octets.append(0)
                digits = 0
            } else if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte), digits < 3 {
                octets[octets.count - 1] = octets[octets.count - 1] * 10 + Int(byte - UInt8(ascii: "0"))
                digits += 1
            } else {
                return false
            }
        }
        return octets.count == 4 && digits > 0 && octets[0] == 127 && octets.allSatisfy { $0 <= 255 }
    }

    /// Whether a FETCHD_ALLOWED_HOSTS item is a host name or address as `Host` carries it
    /// (no port, no scheme): letters, digits, `.`, `-`, `_`, or a bracketed IPv6 address.
    static func isValidAllowedHost(_ item: String) -> Bool {
        if item.hasPrefix("[") {
            return item.count > 2 && item.hasSuffix("]")
                && item.dropFirst().dropLast().allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
        }
        return !item.isEmpty && item.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_") }
    }
}
