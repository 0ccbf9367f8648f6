extension Sequence where Element == UInt8 {
    /// Lowercase hexadecimal, two digits a byte (digests, their prefixes, bytes sent as text).
    /// Inlinable so that it is specialised where it is called: PostgreSQL's event log sends every
    /// payload through it, and the generic version walked each byte through an unspecialised iterator.
    @inlinable
    public var hex: String {
        var out: [UInt8] = []
        out.reserveCapacity(underestimatedCount * 2)
        for byte in self {
            let high = byte >> 4, low = byte & 15
            out.append(high < 10 ? UInt8(ascii: "0") + high : UInt8(ascii: "a") - 10 + high)
            out.append(low < 10 ? UInt8(ascii: "0") + low : UInt8(ascii: "a") - 10 + low)
        }
        return String(decoding: out, as: UTF8.self)
    }
}
