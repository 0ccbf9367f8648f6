/// Makes text from a server or from libcurl safe to report: the secret key replaced, anything
/// from a SigV4 Authorization value on cut off (a signature replays its request for minutes),
/// and the whole kept short.
struct S3MessageRedaction: Sendable {
    let secretAccessKey: String

    static let maximumLength = 400

    func redact(_ message: String) -> String {
        var text = message
        if !secretAccessKey.isEmpty { text = text.replacing(secretAccessKey, with: "[secret]") }
        for marker in ["AWS4-HMAC-SHA256", "Signature="] {
            if let range = text.firstRange(of: marker) { text = text[..<range.lowerBound] + "[redacted]" }
        }
        if text.count > Self.maximumLength { text = text.prefix(Self.maximumLength) + "…" }
        return text
    }

    func redact(_ failure: ObjectStorageFailure) -> ObjectStorageFailure {
        switch failure {
        case .refused(let status, let code, let message):
            return .refused(status: status, code: redact(code), message: redact(message))
        case .unavailable(let message): return .unavailable(redact(message))
        case .unreachable(let message): return .unreachable(redact(message))
        case .exists, .noSuchUpload: return failure
        }
    }
}
