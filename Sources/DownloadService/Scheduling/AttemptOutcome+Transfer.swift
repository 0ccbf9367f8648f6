import DownloadCore
import Transfer

extension AttemptOutcome {
    /// The domain's view of how a transfer attempt ended; nil for a cancelled transfer.
    init?(_ result: TransferResult) {
        switch result.failure {
        case nil: self = .http(status: result.httpStatus ?? 0)
        case .network(let message)?: self = .network(message)
        case .timeout(let message)?: self = .timeout(message)
        case .tooLarge?: self = .tooLarge
        case .blockedAddress(let address)?: self = .blockedAddress(address)
        case .diskFull?: self = .diskFull
        case .fileError(let message)?: self = .fileError(message)
        case .unsupportedScheme(let scheme)?: self = .unsupportedScheme(scheme)
        case .tooManyRedirects?: self = .tooManyRedirects
        case .rangeMismatch(let message)?: self = .rangeMismatch(message)
        case .tls(let message)?: self = .tls(message)
        case .proxy(let message)?: self = .proxy(message)
        case .unreachable(let message)?: self = .unreachable(message)
        case .loginFailed(let message)?: self = .loginFailed(message)
        case .remoteRefused(let message)?: self = .remoteRefused(message)
        case .hostKey(let message)?: self = .hostKey(message)
        case .storage(let failure)?: self.init(storage: failure)
        case .cancelled?: return nil
        }
    }
}
