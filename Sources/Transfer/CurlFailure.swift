import CCurl

extension TransferFailure {
    /// What a curl error means to a caller.
    /// - Parameters:
    ///   - message: curl's error buffer (or, when empty, its description of `code`).
    ///   - refusedAddress: the address the policy refused during this attempt, if any: a connect
    ///     failure after a refusal is reported as that refusal.
    init(curlCode code: CURLcode, message: String, refusedAddress: String?) {
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            self = .timeout(message)
        case CURLE_UNSUPPORTED_PROTOCOL:
            self = .unsupportedScheme(message)
        case CURLE_TOO_MANY_REDIRECTS:
            self = .tooManyRedirects
        case CURLE_FILESIZE_EXCEEDED:
            self = .tooLarge
        case CURLE_COULDNT_CONNECT where refusedAddress != nil:
            self = .blockedAddress(refusedAddress ?? "")
        default:
            self = .network(message)
        }
    }
}
