extension JSONValue {
    /// The value as compact JSON text. Object members come out sorted by key (a parsed object
    /// keeps no order), so equal values give equal text.
    public var jsonText: String {
        var bytes: [UInt8] = []
        append(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    private func append(to bytes: inout [UInt8]) {
        switch self {
        case .null: bytes.append(contentsOf: "null".utf8)
        case .bool(let flag): bytes.append(contentsOf: (flag ? "true" : "false").utf8)
        case .integer(let number): bytes.append(contentsOf: String(number).utf8)
        // The parser accepts only finite numbers; Swift's shortest round-trip form is valid JSON.
        case .number(let number): bytes.append(contentsOf: "\(number)".utf8)
        case .string(let text): JSONString.append(text, to: &bytes)
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                item.append(to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sortedByUTF8().enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                JSONString.append(key, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                members[key]?.append(to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }
}
