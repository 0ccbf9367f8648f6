import Crypto
import Foundation
import HTTPServer
import Synchronization

/// Bearer tokens from FETCHD_API_TOKENS and FETCHD_API_TOKENS_FILE, compared in constant time.
/// With no tokens configured every request is let in (fetchd then listens on loopback only).
final class Authenticator: Sendable {
    private let tokens: Mutex<[[UInt8]]>
    private let inlineTokens: [String]
    private let tokensFile: String?

    init(tokens: [String], tokensFile: String?) throws {
        inlineTokens = tokens
        self.tokensFile = tokensFile
        self.tokens = Mutex([])
        try reload()
    }

    /// Re-reads the tokens file (for SIGHUP).
    func reload() throws {
        var all = inlineTokens
        if let tokensFile {
            let text: String
            do {
                text = try TextFile.read(tokensFile)
            } catch {
                throw Configuration.Invalid(description: "cannot read FETCHD_API_TOKENS_FILE (--api-tokens-file) '\(tokensFile)': \(error.reason)")
            }
            all += text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        }
        tokens.withLock { $0 = all.map { Array($0.utf8) } }
    }

    var isEnabled: Bool { tokens.withLock { !$0.isEmpty } }

    /// The principal the request acts as (idempotency keys are scoped to it), or nil if it is not allowed in.
    func principal(for request: HTTPRequest) -> String? {
        let known = tokens.withLock { $0 }
        guard !known.isEmpty else { return "anonymous" }
        guard let header = request.headers["Authorization"], header.count > 7,
              header.prefix(7).lowercased() == "bearer " else { return nil }
        let presented = Array(header.dropFirst(7).trimmingCharacters(in: .whitespaces).utf8)
        var match: [UInt8]?
        // Compare against every token, always in full, so timing does not reveal which one nearly matched.
        for token in known where constantTimeEqual(token, presented) { match = token }
        guard let match else { return nil }
        return "token:" + SHA256.hash(data: match).prefix(8).hex
    }

    private func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for i in 0..<max(a.count, b.count) {
            difference |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0)
        }
        return difference == 0
    }

    static func unauthorized() -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.set("WWW-Authenticate", "Bearer realm=\"fetchd\"")
        return .problem(401, title: "Unauthorized", detail: "a valid bearer token is required", headers: headers)
    }
}
