/// The `user:password@` part of a URL's authority: put in from a submission's `auth` field, and
/// masked wherever a URL is shown. Pure, on bytes; the URL is already validated.
public enum URLUserInfo {
    public static let mask = "***"

    /// `url` with any password in its authority shown as `***` (`ftp://ann:***@host/file`).
    public static func masked(_ url: String) -> String {
        // Most URLs have no user-info at all: one scan of the bytes, and the URL as it is (every
        // job a list shows comes through here).
        guard hasAt(url), let (start, end) = authority(of: url),
              let at = url[start..<end].lastIndex(of: "@"),
              let colon = url[start..<at].firstIndex(of: ":")
        else { return url }
        return String(url[..<url.index(after: colon)]) + mask + String(url[at...])
    }

    /// Whether `url` has an "@" anywhere, read off its contiguous bytes.
    private static func hasAt(_ url: String) -> Bool {
        var url = url
        return url.withUTF8 { $0.contains(UInt8(ascii: "@")) }
    }

    /// `url` with `username` and `password` as its user-info, percent-encoded, in place of any it had.
    public static func replacing(in url: String, username: String, password: String) -> String {
        guard let (start, end) = authority(of: url) else { return url }
        let hostPort = url[start..<end].lastIndex(of: "@").map { url[url.index(after: $0)..<end] } ?? url[start..<end]
        return String(url[..<start]) + encoded(username) + ":" + encoded(password) + "@" + hostPort + String(url[end...])
    }

    /// The authority's bounds: after "://", up to the first "/", "?" or "#".
    private static func authority(of url: String) -> (String.Index, String.Index)? {
        guard let colon = url.firstIndex(of: ":"), url[url.index(after: colon)...].hasPrefix("//") else { return nil }
        let start = url.index(colon, offsetBy: 3)
        let end = url[start...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? url.endIndex
        return (start, end)
    }

    /// RFC 3986 unreserved characters as they are, every other byte as %XX.
    static func encoded(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            let isUnreserved = (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || "-._~".utf8.contains(byte)
            if isUnreserved {
                result.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                result += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return result
    }
}
