/// How one attempt ended, in the domain's terms (the service maps transfer results onto it).
public enum AttemptOutcome: Sendable, Equatable {
    /// The origin answered with a final status and the body (if 2xx) is complete on disk.
    case http(status: Int)
    case network(String)
    case timeout(String)
    case tooLarge
    case blockedAddress(String)
    case diskFull
    case fileError(String)
    case unsupportedScheme(String)
    case tooManyRedirects
    case rangeMismatch(String)
    /// The origin's certificate or the TLS handshake was refused.
    case tls(String)
    /// The configured proxy refused, failed or could not be reached.
    case proxy(String)
}

public enum AttemptDecision: Sendable, Equatable {
    /// The body is complete: verify and move it into place.
    case finish
    /// Try again after this long.
    case retry(after: Duration, cause: DownloadError)
    case fail(DownloadError)
}

/// Which outcomes are worth another attempt, and when. Pure: randomness comes in as a value in 0..<1.
public struct RetryPolicy: Sendable {
    public var maxAttempts: Int
    public var baseDelay: Duration
    public var maxDelay: Duration

    public init(maxAttempts: Int, baseDelay: Duration, maxDelay: Duration = .seconds(3600)) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    /// `attempts` counts the attempt that just ended; `retryAfter` is the origin's Retry-After.
    public func decide(_ outcome: AttemptOutcome, attempts: Int, retryAfter: Duration?, jitter: Double) -> AttemptDecision {
        let transient: DownloadError
        switch outcome {
        case .http(let status) where (200..<300).contains(status):
            return .finish
        case .http(let status) where status == 408 || status == 429 || (500..<600).contains(status):
            transient = DownloadError(code: ErrorCode.httpStatus, message: "the origin answered \(status)")
        case .http(let status) where status == 416:
            return .fail(DownloadError(code: ErrorCode.rangeNotSatisfiable, message: "the origin answered 416 to the resume request"))
        case .http(let status):
            return .fail(DownloadError(code: ErrorCode.httpStatus, message: "the origin answered \(status)"))
        case .network(let message), .rangeMismatch(let message):
            transient = DownloadError(code: ErrorCode.network, message: message)
        case .timeout(let message):
            transient = DownloadError(code: ErrorCode.timeout, message: message)
        case .proxy(let message):
            transient = DownloadError(code: ErrorCode.proxy, message: message)
        case .tls(let message):
            // Trying again meets the same certificate: only the operator (a CA bundle) can fix it.
            return .fail(DownloadError(code: ErrorCode.tls, message: message))
        case .tooLarge:
            return .fail(DownloadError(code: ErrorCode.tooLarge, message: "the body exceeds the configured maximum size"))
        case .blockedAddress(let address):
            return .fail(DownloadError(code: ErrorCode.blockedAddress, message: "connecting to \(address) is not allowed"))
        case .diskFull:
            return .fail(DownloadError(code: ErrorCode.diskFull, message: "no space left on the device"))
        case .fileError(let message):
            return .fail(DownloadError(code: ErrorCode.fileError, message: message))
        case .unsupportedScheme(let scheme):
            return .fail(DownloadError(code: ErrorCode.unsupportedScheme, message: "redirected to unsupported scheme \(scheme)"))
        case .tooManyRedirects:
            return .fail(DownloadError(code: ErrorCode.tooManyRedirects, message: "too many redirects"))
        }
        guard attempts < maxAttempts else { return .fail(transient) }
        return .retry(after: delay(afterAttempt: attempts, retryAfter: retryAfter, jitter: jitter), cause: transient)
    }

    /// Exponential backoff (base × 2^(n-1)) with ±25 % jitter, capped; a Retry-After is honoured as a minimum.
    public func delay(afterAttempt attempts: Int, retryAfter: Duration?, jitter: Double) -> Duration {
        let doublings = max(0, min(attempts - 1, 30))
        let backoff = min(maxDelay, baseDelay * (1 << doublings)) * (0.75 + 0.5 * jitter)
        guard let retryAfter else { return backoff }
        return max(backoff, min(retryAfter, maxDelay))
    }
}
