/// The parts of an absolute URL that validation and per-host limits need: http(s), or for a
/// download's source also a file server's (`ftp`, `ftps`, `sftp`). libcurl does the real parsing
/// when it fetches; this only rejects what can never be fetched.
public struct HTTPURL: Sendable, Equatable {
    public var scheme: String
    public var host: String
    public var port: Int

    public init(scheme: String, host: String, port: Int) {
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    /// "host:port", the key of per-host limits.
    /// Joined, not interpolated: interpolation cost a tenth of a microsecond, on every submission.
    public var hostKey: String { (host.utf8.contains(UInt8(ascii: ":")) ? "[" + host + "]:" : host + ":") + String(port) }

    public enum Problem: Error, Equatable {
        case notAbsolute, unsupportedScheme(String), missingHost, invalidCharacter, invalidPort, tooLong
    }

    public static let maxLength = 8192

    /// Lists, not sets, sorted as error messages name them: every submission's URL is checked
    /// against one, and comparing a few small strings costs less than hashing one.
    public static let webSchemes = ["http", "https"]
    /// What a download's `url` and `mirrors` may use.
    public static let downloadSchemes = ["ftp", "ftps", "http", "https", "sftp"]

    /// The scheme's port when the URL names none.
    static func defaultPort(of scheme: String) -> Int {
        switch scheme {
        case "https": return 443
        case "ftp": return 21
        case "ftps": return 990
        case "sftp": return 22
        default: return 80
        }
    }

    /// Whether `text` starts with `scheme` and a colon, in any case: a look at a URL parsed already,
    /// without parsing it again. One pass over the bytes: a prefix view, counted and zipped, took
    /// about 1 % of a batch's CPU.
    public static func hasScheme(_ scheme: String, _ text: String) -> Bool {
        var bytes = text.utf8.makeIterator()
        for expected in scheme.utf8 {
            guard let byte = bytes.next(), byte.asciiLowercased == expected else { return false }
        }
        return bytes.next() == UInt8(ascii: ":")
    }

    /// Whether the scheme is a file server's (FTP or SFTP), whose URL may carry a password.
    public var isFileServer: Bool { scheme == "ftp" || scheme == "ftps" || scheme == "sftp" }

    /// On bytes: every submission's URL goes through here. Past the first check every byte is
    /// printable ASCII, so bytes and characters are the same thing.
    public static func parse(_ text: String, schemes: [String] = webSchemes) -> Result<HTTPURL, Problem> {
        let bytes = Array(text.utf8)
        guard bytes.count <= maxLength else { return .failure(.tooLong) }
        guard !bytes.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) else { return .failure(.invalidCharacter) }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return .failure(.notAbsolute) }
        let schemeBytes = bytes[..<colon].map(\.asciiLowercased)
        let scheme = String(decoding: schemeBytes, as: UTF8.self)
        guard let first = schemeBytes.first, isLetter(first),
              schemeBytes.allSatisfy({ isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") })
        else { return .failure(.notAbsolute) }
        guard schemes.contains(scheme) else { return .failure(.unsupportedScheme(scheme)) }
        let rest = bytes[(colon + 1)...]
        guard rest.starts(with: [UInt8(ascii: "/"), UInt8(ascii: "/")]) else { return .failure(.notAbsolute) }
        let authority = rest.dropFirst(2).prefix { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        let hostPort = authority.lastIndex(of: UInt8(ascii: "@")).map { authority[($0 + 1)...] } ?? authority
        var host: ArraySlice<UInt8>
        var portText: ArraySlice<UInt8>?
        if hostPort.first == UInt8(ascii: "[") {
            guard let close = hostPort.firstIndex(of: UInt8(ascii: "]")) else { return .failure(.missingHost) }
            host = hostPort[(hostPort.startIndex + 1)..<close]
            let after = hostPort[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { return .failure(.invalidPort) }
                portText = after.dropFirst()
            }
        } else if let portColon = hostPort.lastIndex(of: UInt8(ascii: ":")) {
            host = hostPort[..<portColon]
            portText = hostPort[(portColon + 1)...]
        } else {
            host = hostPort
        }
        guard !host.isEmpty else { return .failure(.missingHost) }
        var port = defaultPort(of: scheme)
        if let portText, !portText.isEmpty {
            guard portText.count <= 5, let value = Int(String(decoding: portText, as: UTF8.self)), (1...65535).contains(value) else {
                return .failure(.invalidPort)
            }
            port = value
        }
        return .success(HTTPURL(scheme: scheme, host: String(decoding: host.map(\.asciiLowercased), as: UTF8.self), port: port))
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }
    private static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
}
