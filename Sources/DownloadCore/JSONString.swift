/// JSON string literals, written straight into bytes: shared by the API's JSON writer and the
/// JSON log lines.
public enum JSONString {
    /// Appends `text` as a quoted JSON string, escaping quotes, backslashes and control characters.
    public static func append(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            // Most strings need no escape: copy runs between escapes whole.
            var runStart = 0
            for (index, byte) in utf8.enumerated() where needsEscape(byte) {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                appendEscape(byte, to: &bytes)
                runStart = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// `texts` as a JSON array of strings.
    public static func array(_ texts: [String]) -> String {
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        for text in texts {
            if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
            append(text, to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether `byte` cannot stand for itself inside a JSON string: a quote, a backslash or a control character.
    @inlinable
    public static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    /// The byte a one-character escape (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`) stands
    /// for; nil for `\u` and for what is not an escape. Shared by the JSON parsers.
    public static func unescaped(_ escaped: UInt8) -> UInt8? {
        switch escaped {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): escaped
        case UInt8(ascii: "b"): 0x08
        case UInt8(ascii: "f"): 0x0C
        case UInt8(ascii: "n"): 0x0A
        case UInt8(ascii: "r"): 0x0D
        case UInt8(ascii: "t"): 0x09
        default: nil
        }
    }

    private static func appendEscape(_ byte: UInt8, to bytes: inout [UInt8]) {
        let backslash = UInt8(ascii: "\\")
        switch byte {
        case UInt8(ascii: "\""), backslash: bytes.append(contentsOf: [backslash, byte])
        case 0x0A: bytes.append(contentsOf: [backslash, UInt8(ascii: "n")])
        case 0x0D: bytes.append(contentsOf: [backslash, UInt8(ascii: "r")])
        case 0x09: bytes.append(contentsOf: [backslash, UInt8(ascii: "t")])
        default:
            let hex = Array("0123456789abcdef".utf8)
            bytes.append(contentsOf: [backslash, UInt8(ascii: "u"), 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 15)]])
        }
    }
}
