/// An IPv4 or IPv6 network such as "10.0.0.0/8" or "fc00::/7".
public struct CIDR: Sendable, Hashable, CustomStringConvertible {
    let network: IPAddress
    let prefixLength: Int

    /// "address/length"; a bare address is a single host (/32 or /128). Host bits set in the
    /// address are ignored ("10.1.2.3/8" is 10.0.0.0/8).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(String(parts[0])) else { return nil }
        let width = address.isIPv4 ? 32 : 128
        guard parts.count == 2 else {
            self.init(address, prefixLength: width)
            return
        }
        let lengthText = parts[1]
        guard !lengthText.isEmpty, lengthText.count <= 3, lengthText.allSatisfy(\.isASCII),
              lengthText.allSatisfy(\.isNumber), let length = Int(lengthText), length <= width
        else { return nil }
        self.init(address, prefixLength: length)
    }

    init(_ address: IPAddress, prefixLength: Int) {
        self.prefixLength = prefixLength
        let mask = Self.mask(prefixLength, width: address.isIPv4 ? 32 : 128)
        network = address.isIPv4
            ? IPAddress(ipv4: UInt32(truncatingIfNeeded: address.bits & mask))
            : IPAddress(ipv6: address.bits & mask)
    }

    /// True if `address` is of the same family and inside this network.
    public func contains(_ address: IPAddress) -> Bool {
        guard address.isIPv4 == network.isIPv4 else { return false }
        let mask = Self.mask(prefixLength, width: network.isIPv4 ? 32 : 128)
        return address.bits & mask == network.bits
    }

    public var description: String { "\(network)/\(prefixLength)" }

    /// The top `length` bits of a `width`-bit address, as a mask over the low `width` bits.
    private static func mask(_ length: Int, width: Int) -> UInt128 {
        guard length > 0 else { return 0 }
        let all: UInt128 = width == 128 ? ~0 : (UInt128(1) << width) - 1
        return all & ~((UInt128(1) << (width - length)) - 1)
    }
}
