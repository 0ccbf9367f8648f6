extension Sequence where Element == UInt8 {
    /// Lowercase hexadecimal, two digits a byte (digests, their prefixes, bytes sent as text).
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in self {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
