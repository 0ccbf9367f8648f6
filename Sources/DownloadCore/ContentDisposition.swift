/// A `Content-Disposition` response header (RFC 6266) as far as a download needs it: the
/// disposition type and the file name the server suggests, `filename*` (RFC 8187, UTF-8 or
/// ISO-8859-1, percent-encoded) before `filename`.
///
/// The name is the server's, unchecked: the service passes it through `FileName.safe` (or uses
/// `FileName.choose`) before it goes near the disk. Parsing never fails on garbage: what cannot be
/// read is left out, and a header with nothing usable gives a nil `filename`.
public struct ContentDisposition: Sendable, Equatable {
    /// Lowercased, like `attachment` or `inline`; empty when the header did not start with a token.
    public var type: String
    public var filename: String?

    public init(_ header: String) {
        var scanner = HeaderScanner(header)
        type = scanner.token()?.lowercased() ?? ""
        var plain: String?
        var extended: String?
        while scanner.skip(past: ";") {
            guard let name = scanner.token()?.lowercased() else { continue }
            guard scanner.take("=") else { continue }
            let value = scanner.value()
            // RFC 6266 §4.1: a repeated parameter makes the header invalid; the first one is
            // what browsers use, so the same is done here.
            switch name {
            case "filename" where plain == nil:
                plain = value
            case "filename*" where extended == nil:
                extended = value.flatMap(Self.decodeExtendedValue)
            default:
                break
            }
        }
        filename = extended ?? plain
    }

    /// RFC 8187 ext-value: `charset'language'percent-encoded`. Charsets other than UTF-8 and
    /// ISO-8859-1, or bytes that are not valid in the charset, give nil.
    static func decodeExtendedValue(_ text: String) -> String? {
        let parts = text.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = PercentEncoding.decode(parts[2]) else { return nil }
        switch parts[0].lowercased() {
        case "utf-8":
            return String(validating: bytes, as: UTF8.self)
        case "iso-8859-1":
            return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        default:
            return nil
        }
    }
}

/// Percent-decoding of URL paths and RFC 8187 values.
enum PercentEncoding {
    /// The bytes, or nil when a `%` is not followed by two hex digits.
    static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// Reads the tokens, `=`, `;` and quoted strings of a header value, forgiving whatever else.
private struct HeaderScanner {
    private let scalars: [Unicode.Scalar]
    private var position = 0

    init(_ text: String) {
        scalars = Array(text.unicodeScalars)
    }

    private mutating func skipWhitespace() {
        while position < scalars.count, scalars[position] == " " || scalars[position] == "\t" { position += 1 }
    }

    /// A run of characters up to whitespace, `;`, `=` or a quote; nil if there is none here.
    mutating func token() -> String? {
        skipWhitespace()
        let start = position
        while position < scalars.count, !";=\" \t".unicodeScalars.contains(scalars[position]) { position += 1 }
        return position > start ? String(String.UnicodeScalarView(scalars[start..<position])) : nil
    }

    /// Takes `character` if it comes next (after whitespace).
    mutating func take(_ character: Unicode.Scalar) -> Bool {
        skipWhitespace()
        guard position < scalars.count, scalars[position] == character else { return false }
        position += 1
        return true
    }

    /// Moves past the next `character` outside quotes; false at the end of the text.
    mutating func skip(past character: Unicode.Scalar) -> Bool {
        while position < scalars.count {
            if scalars[position] == "\"" {
                _ = quoted()
                continue
            }
            position += 1
            if scalars[position - 1] == character { return true }
        }
        return false
    }

    /// A parameter value: a quoted string (unescaped; an unterminated one runs to the end) or a token.
    mutating func value() -> String? {
        skipWhitespace()
        guard position < scalars.count else { return nil }
        return scalars[position] == "\"" ? quoted() : token()
    }

    private mutating func quoted() -> String {
        position += 1
        var text = String.UnicodeScalarView()
        while position < scalars.count {
            let scalar = scalars[position]
            position += 1
            if scalar == "\"" { break }
            if scalar == "\\", position < scalars.count {
                text.append(scalars[position])
                position += 1
            } else {
                text.append(scalar)
            }
        }
        return String(text)
    }
}
