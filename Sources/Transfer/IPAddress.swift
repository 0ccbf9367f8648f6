import Glibc

/// An IPv4 or IPv6 address, as curl is about to connect to it or as written in configuration.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address bits; an IPv4 address occupies the low 32.
    let bits: UInt128
    let isIPv4: Bool

    init(ipv4 bits: UInt32) {
        self.bits = UInt128(bits)
        isIPv4 = true
    }

    init(ipv6 bits: UInt128) {
        self.bits = bits
        isIPv4 = false
    }

    /// A strict dotted-quad IPv4 literal (no leading zeros, no shorthand) or an IPv6 literal,
    /// with or without surrounding brackets. Zone identifiers (`%eth0`) are not accepted.
    public init?(_ literal: String) {
        if literal.hasPrefix("["), literal.hasSuffix("]") {
            // Brackets only ever surround an IPv6 literal (as in a URL).
            self.init(ipv6Literal: String(literal.dropFirst().dropLast()))
        } else if literal.utf8.contains(UInt8(ascii: ":")) {
            self.init(ipv6Literal: literal)
        } else {
            // glibc's inet_pton takes exactly four decimal parts without leading zeros,
            // unlike inet_aton, which also takes "10.1" or "0x7f.1".
            var raw = in_addr()
            guard inet_pton(AF_INET, literal, &raw) == 1 else { return nil }
            self.init(ipv4: UInt32(bigEndian: raw.s_addr))
        }
    }

    /// An IPv6 literal, with or without a zone ("fe80::1%eth0", or "%25eth0" as a URL spells it):
    /// the zone picks an interface, not another address, so it is dropped.
    private init?(ipv6Literal literal: String) {
        var raw = in6_addr()
        let address = literal.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard inet_pton(AF_INET6, String(address), &raw) == 1 else { return nil }
        self.init(ipv6: withUnsafeBytes(of: raw) { Self.bigEndianValue($0) })
    }

    /// The address of a socket address as curl hands it to CURLOPT_OPENSOCKETFUNCTION.
    init?(socketAddress address: UnsafePointer<sockaddr>, length: Int) {
        switch Int32(address.pointee.sa_family) {
        case AF_INET where length >= MemoryLayout<sockaddr_in>.size:
            let ipv4 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self)
            self.init(ipv4: UInt32(bigEndian: ipv4.sin_addr.s_addr))
        case AF_INET6 where length >= MemoryLayout<sockaddr_in6>.size:
            let ipv6 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in6.self)
            self.init(ipv6: withUnsafeBytes(of: ipv6.sin6_addr) { Self.bigEndianValue($0) })
        default:
            return nil
        }
    }

    public var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        if isIPv4 {
            var raw = in_addr(s_addr: UInt32(truncatingIfNeeded: bits).bigEndian)
            inet_ntop(AF_INET, &raw, &buffer, socklen_t(buffer.count))
        } else {
            var raw = in6_addr()
            withUnsafeMutableBytes(of: &raw) { bytes in
                for index in 0..<16 {
                    bytes[index] = UInt8(truncatingIfNeeded: bits >> (8 * (15 - index)))
                }
            }
            inet_ntop(AF_INET6, &raw, &buffer, socklen_t(buffer.count))
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func bigEndianValue(_ bytes: UnsafeRawBufferPointer) -> UInt128 {
        bytes.reduce(UInt128(0)) { ($0 << 8) | UInt128($1) }
    }
}
