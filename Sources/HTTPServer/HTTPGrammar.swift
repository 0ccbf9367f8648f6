// Byte classes and comparisons from the HTTP grammar (RFC 9110, RFC 9112).

/// tchar (RFC 9110 §5.6.2): the bytes allowed in methods and field names.
@inline(__always)
func isTokenByte(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
         UInt8(ascii: "0")...UInt8(ascii: "9"):
        true
    case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
         UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
         UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
        true
    default:
        false
    }
}

@inline(__always)
func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
    default: return nil
    }
}

/// ASCII case-insensitive comparison without allocating lowercased copies.
func equalsIgnoringASCIICase(_ a: String, _ b: String) -> Bool {
    let a = a.utf8, b = b.utf8
    guard a.count == b.count else { return false }
    for (x, y) in zip(a, b) where x != y {
        guard asciiLowercased(x) == asciiLowercased(y) else { return false }
    }
    return true
}

func hasPrefixIgnoringASCIICase(_ text: some StringProtocol, _ prefix: String) -> Bool {
    let text = text.utf8, prefix = prefix.utf8
    guard text.count >= prefix.count else { return false }
    return zip(text, prefix).allSatisfy { asciiLowercased($0) == asciiLowercased($1) }
}

@inline(__always)
func asciiLowercased(_ byte: UInt8) -> UInt8 {
    byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
}
