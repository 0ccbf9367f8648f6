/// What an S3 answer (or the lack of one) means for the caller.
extension ObjectStorageFailure {
    /// Error codes that a later retry may get past, whatever their status.
    static let retryableCodes: Set<String> = [
        "SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable", "OperationAborted",
    ]

    /// nil when the answer is a success to read: a 2xx without an `<Error>` document (S3 may
    /// answer CompleteMultipartUpload 200 and report its failure in the body). The message is not
    /// yet redacted.
    static func classify(_ result: TransferResult, document: S3XMLDocument?, operation: S3Operation) -> ObjectStorageFailure? {
        if let failure = result.failure {
            switch failure {
            case .unreachable(let message): return .unreachable(message)
            case .proxy(let message): return .unreachable("proxy: \(message)")
            default: return .unavailable(describe(failure))
            }
        }
        guard let status = result.httpStatus else { return .unavailable("no response") }
        let error = document?.isError == true ? document : nil
        if (200..<300).contains(status) && error == nil { return nil }

        let code = error?.fields["Code"].flatMap { $0.isEmpty ? nil : $0 } ?? codeForStatus(status)
        let message = error?.fields["Message"].flatMap { $0.isEmpty ? nil : $0 } ?? "HTTP \(status)"
        if status == 412 || code == "PreconditionFailed" { return .exists }
        if code == "NoSuchUpload" { return .noSuchUpload }
        if code == "ConditionalRequestConflict" {
            // S3 asks for a new multipart upload after this, and for a plain retry of a PutObject.
            return operation == .completeMultipartUpload ? .noSuchUpload : .unavailable("\(code) (HTTP \(status)): \(message)")
        }
        if status >= 500 || status == 429 || retryableCodes.contains(code) {
            return .unavailable("\(code) (HTTP \(status)): \(message)")
        }
        return .refused(status: status, code: code, message: message)
    }

    /// S3's code for a status when the answer has no body to say it (HEAD, or a proxy's page).
    static func codeForStatus(_ status: Int) -> String {
        switch status {
        case 200..<300: return "InternalError"
        case 301: return "PermanentRedirect"
        case 307: return "TemporaryRedirect"
        case 400: return "BadRequest"
        case 403: return "AccessDenied"
        case 404: return "NotFound"
        case 405: return "MethodNotAllowed"
        case 409: return "Conflict"
        case 412: return "PreconditionFailed"
        case 429: return "SlowDown"
        case 500: return "InternalError"
        case 503: return "ServiceUnavailable"
        default: return "HTTP\(status)"
        }
    }

    private static func describe(_ failure: TransferFailure) -> String {
        switch failure {
        case .network(let message): return "network: \(message)"
        case .timeout(let message): return "timeout: \(message)"
        case .tls(let message): return "TLS: \(message)"
        case .fileError(let message): return "reading the body: \(message)"
        case .diskFull: return "disk full"
        case .tooLarge: return "answer too large"
        case .blockedAddress(let message): return "address refused: \(message)"
        case .unsupportedScheme(let scheme): return "unsupported scheme \(scheme)"
        case .tooManyRedirects: return "too many redirects"
        case .rangeMismatch(let message): return "range mismatch: \(message)"
        case .proxy(let message): return "proxy: \(message)"
        case .unreachable(let message): return "unreachable: \(message)"
        case .loginFailed(let message): return "login failed: \(message)"
        case .remoteRefused(let message): return "refused: \(message)"
        case .hostKey(let message): return "host key: \(message)"
        case .storage(let failure): return "storage: \(failure)"
        case .cancelled: return "cancelled"
        }
    }
}
