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

extension Array where Element == UInt8 {
    /// The bytes a string of hexadecimal digits (either case, two a byte) writes; nil for anything else.
    public init?(hex: String) {
        let digits = Array<UInt8>(hex.utf8)
        guard digits.count.isMultiple(of: 2) else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        self = bytes
    }
}
