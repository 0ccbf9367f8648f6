/// The parts of an absolute http(s) URL that validation and per-host limits need. libcurl does
/// the real parsing when it fetches; this only rejects what can never be fetched.
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
    public var hostKey: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    public enum Problem: Error, Equatable {
        case notAbsolute, unsupportedScheme(String), missingHost, invalidCharacter, invalidPort, tooLong
    }

    public static let maxLength = 8192

    public static func parse(_ text: String) -> Result<HTTPURL, Problem> {
        guard text.utf8.count <= maxLength else { return .failure(.tooLong) }
        guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F || $0.value > 0x7E }) else {
            return .failure(.invalidCharacter)
        }
        guard let colon = text.firstIndex(of: ":") else { return .failure(.notAbsolute) }
        let scheme = text[..<colon].lowercased()
        guard !scheme.isEmpty, scheme.allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }),
              scheme.first?.isLetter == true else { return .failure(.notAbsolute) }
        guard scheme == "http" || scheme == "https" else { return .failure(.unsupportedScheme(scheme)) }
        let rest = text[text.index(after: colon)...]
        guard rest.hasPrefix("//") else { return .failure(.notAbsolute) }
        let authorityAndPath = rest.dropFirst(2)
        let authority = authorityAndPath.prefix(while: { $0 != "/" && $0 != "?" && $0 != "#" })
        let hostPort = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? ""
        var host: Substring
        var portText: Substring?
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { return .failure(.missingHost) }
            host = hostPort[hostPort.index(after: hostPort.startIndex)..<close]
            let after = hostPort[hostPort.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return .failure(.invalidPort) }
                portText = after.dropFirst()
            }
        } else if let portColon = hostPort.lastIndex(of: ":") {
            host = hostPort[..<portColon]
            portText = hostPort[hostPort.index(after: portColon)...]
        } else {
            host = hostPort
        }
        guard !host.isEmpty else { return .failure(.missingHost) }
        var port = scheme == "https" ? 443 : 80
        if let portText, !portText.isEmpty {
            guard portText.count <= 5, let value = Int(portText), (1...65535).contains(value) else {
                return .failure(.invalidPort)
            }
            port = value
        }
        return .success(HTTPURL(scheme: scheme, host: host.lowercased(), port: port))
    }
}
