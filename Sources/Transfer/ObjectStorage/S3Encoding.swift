/// S3's URI encoding (the one SigV4 signs): RFC 3986 unreserved characters `A-Za-z0-9-._~` kept,
/// every other byte of the UTF-8 form as `%XX` in upper-case hex.
enum S3Encoding {
    static func encode(_ text: String) -> String {
        var encoded: [UInt8] = []
        encoded.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) {
                encoded.append(byte)
            } else {
                encoded.append(UInt8(ascii: "%"))
                encoded.append(hexDigits[Int(byte >> 4)])
                encoded.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    /// A key as a URL path: each `/`-separated segment encoded, the slashes kept.
    static func encodePath(_ key: String) -> String {
        key.split(separator: "/", omittingEmptySubsequences: false).map { encode(String($0)) }.joined(separator: "/")
    }

    static func isUnreserved(_ byte: UInt8) -> Bool {
        isAlphanumeric(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
    }

    static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)
}

/// A query string already in SigV4's canonical form, since libcurl signs the query exactly as
/// the URL carries it: parameters sorted by name, each `name=value` (with `=` for an empty
/// value too), both encoded with `S3Encoding`.
struct S3Query {
    var parameters: [(name: String, value: String)]

    init(_ parameters: [(name: String, value: String)] = []) {
        self.parameters = parameters
    }

    /// Without the `?`; empty when there are no parameters.
    var canonical: String {
        parameters
            .map { (name: S3Encoding.encode($0.name), value: S3Encoding.encode($0.value)) }
            .sorted { $0.name != $1.name ? $0.name < $1.name : $0.value < $1.value }
            .map { "\($0.name)=\($0.value)" }
            .joined(separator: "&")
    }
}
