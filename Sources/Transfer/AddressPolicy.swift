/// Which addresses a transfer may connect to. Checked on the address curl is about to connect to
/// (every redirect hop, every address of a name), so DNS answers cannot sneak past it.
public struct AddressPolicy: Sendable {
    /// Only public unicast addresses: the default.
    public static let publicOnly = AddressPolicy(allowPrivate: false, allowedNetworks: [])
    /// Anything (FETCHD_ALLOW_PRIVATE_NETWORKS=true).
    public static let allowAll = AddressPolicy(allowPrivate: true, allowedNetworks: [])

    public let allowPrivate: Bool
    /// Networks allowed even though they are not public (FETCHD_ALLOW_NETWORKS).
    public let allowedNetworks: [CIDR]

    public init(allowPrivate: Bool, allowedNetworks: [CIDR]) {
        self.allowPrivate = allowPrivate
        self.allowedNetworks = allowedNetworks
    }

    public func permits(_ address: IPAddress) -> Bool {
        if allowPrivate { return true }
        // Connecting to "this host" (0.0.0.0/8, ::) reaches loopback, so only allowing loopback allows it.
        let judged = address.thisHostAsLoopback
        let embedded = judged.embeddedIPv4?.thisHostAsLoopback
        let allowed = allowedNetworks.contains { network in
            network.contains(judged) || embedded.map(network.contains) == true
        }
        return allowed || judged.isPublicUnicast
    }
}

extension IPAddress {
    /// Special-purpose IPv4 ranges: not reachable on, or not meant for, the public Internet.
    private static let nonPublicIPv4: [CIDR] = [
        "0.0.0.0/8",        // "this network"
        "10.0.0.0/8",       // RFC 1918
        "100.64.0.0/10",    // carrier-grade NAT
        "127.0.0.0/8",      // loopback
        "169.254.0.0/16",   // link-local (cloud metadata services live here)
        "172.16.0.0/12",    // RFC 1918
        "192.0.0.0/24",     // IETF protocol assignments
        "192.0.2.0/24",     // documentation
        "192.168.0.0/16",   // RFC 1918
        "198.18.0.0/15",    // benchmarking
        "198.51.100.0/24",  // documentation
        "203.0.113.0/24",   // documentation
        "224.0.0.0/4",      // multicast
        "240.0.0.0/4",      // reserved, including 255.255.255.255
    ].compactMap(CIDR.init)

    private static let nonPublicIPv6: [CIDR] = [
        "::/96",            // unspecified, loopback and the deprecated IPv4-compatible form
        "100::/64",         // discard-only
        "2001:db8::/32",    // documentation
        "fc00::/7",         // unique local
        "fe80::/10",        // link-local
        "fec0::/10",        // deprecated site-local
        "ff00::/8",         // multicast
    ].compactMap(CIDR.init)

    /// IPv6 forms that carry an IPv4 address, with the bit offset of that address.
    private static let ipv4Carriers: [(network: CIDR, shift: Int)] = [
        ("::ffff:0:0/96", 0),    // IPv4-mapped
        ("64:ff9b::/96", 0),     // NAT64
        ("64:ff9b:1::/48", 0),   // local-use NAT64 (RFC 8215)
        ("2002::/16", 80),       // 6to4: the IPv4 address follows the first 16 bits
    ].compactMap { text, shift in CIDR(text).map { ($0, shift) } }

    private static let thisHostIPv4: CIDR? = CIDR("0.0.0.0/8")

    /// 0.0.0.0/8 as 127.0.0.1 and :: as ::1: what a connection to them reaches on Linux.
    var thisHostAsLoopback: IPAddress {
        if isIPv4 { return Self.thisHostIPv4?.contains(self) == true ? IPAddress(ipv4: 0x7F00_0001) : self }
        return bits == 0 ? IPAddress(ipv6: 1) : self
    }

    /// The IPv4 address inside an IPv4-mapped, NAT64 or 6to4 IPv6 address.
    var embeddedIPv4: IPAddress? {
        guard !isIPv4, let carrier = Self.ipv4Carriers.first(where: { $0.network.contains(self) })
        else { return nil }
        return IPAddress(ipv4: UInt32(truncatingIfNeeded: bits >> carrier.shift))
    }

    /// True for an address on the public Internet; an IPv6 address that embeds an IPv4 address
    /// is judged by that address.
    var isPublicUnicast: Bool {
        if isIPv4 {
            return !Self.nonPublicIPv4.contains { $0.contains(self) }
        }
        if Self.nonPublicIPv6.contains(where: { $0.contains(self) }) { return false }
        return embeddedIPv4?.isPublicUnicast ?? true
    }
}
