import Crypto
import Foundation

/// Standard Webhooks v1 signatures: base64 HMAC-SHA256 of "{id}.{timestamp}.{body}", keyed with the
/// base64-decoded secret after its `whsec_` prefix. With several secrets (rotation) every delivery
/// carries one signature per secret, separated by spaces.
public struct WebhookSigner: Sendable {
    private let keys: [[UInt8]]

    public init(secrets: [String]) {
        keys = secrets.compactMap(Self.key(fromSecret:))
    }

    public var isSigning: Bool { !keys.isEmpty }

    public static func key(fromSecret secret: String) -> [UInt8]? {
        let encoded = secret.hasPrefix("whsec_") ? String(secret.dropFirst(6)) : secret
        guard let bytes = Data(base64Encoded: encoded), !bytes.isEmpty else { return nil }
        return Array(bytes)
    }

    /// The `webhook-signature` header value, or nil when no secret is configured.
    public func signature(id: String, timestamp: Int64, body: [UInt8]) -> String? {
        guard isSigning else { return nil }
        var message = Array("\(id).\(timestamp).".utf8)
        message.append(contentsOf: body)
        return keys.map { key in
            "v1," + Data(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key))).base64EncodedString()
        }.joined(separator: " ")
    }
}
