extension UInt8 {
    /// The byte with an ASCII capital letter made small, any other byte as it is: for comparing
    /// names that HTTP and URLs treat case-insensitively without making lowercased strings.
    @inlinable
    public var asciiLowercased: UInt8 {
        self &- UInt8(ascii: "A") < 26 ? self | 0x20 : self
    }
}
