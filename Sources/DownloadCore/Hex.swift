extension Collection where Element == UInt8 {
    /// Lowercase hexadecimal, two digits a byte (digests, their prefixes, bytes sent as text),
    /// written straight into the string's storage. Inlinable so that it is specialised where it is
    /// called: PostgreSQL's event log sends every payload through it, and the generic version
    /// walked each byte through an unspecialised iterator.
    @inlinable
    public var hex: String {
        String(unsafeUninitializedCapacity: count * 2) { digits in
            var next = 0
            for byte in self {
                digits[next] = hexDigit(byte >> 4)
                digits[next + 1] = hexDigit(byte & 15)
                next += 2
            }
            return next
        }
    }
}

extension Sequence where Element == UInt8 {
    /// As a collection's `hex`, for bytes that come one by one (a digest, or its prefix).
    @inlinable
    public var hex: String { Array(self).hex }
}

/// The lowercase hexadecimal digit of a value below 16.
@usableFromInline
func hexDigit(_ value: UInt8) -> UInt8 {
    value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") - 10 + value
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
