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
    /// The origin could not be reached at all (name resolution, connection refused or
    /// unreachable, connect timeout): an outage, not an answer.
    case unreachable(String)
    /// An FTP or SFTP server refused the login.
    case loginFailed(String)
    /// An FTP or SFTP server refused the file for good (its reply).
    case remoteRefused(String)
    /// The SFTP server's host key is unknown or changed.
    case hostKey(String)
    /// The object storage refused a request in a way no retry fixes (its error code and message).
    case storageRefused(String)
    /// The object storage failed a request in a way that passes (5xx, SlowDown, a timeout).
    case storageUnavailable(String)
    /// The object storage could not be reached at all: an outage.
    case storageUnreachable(String)

    /// The URL names no file the origin will give (a 404 or 410, a file server's refusal): a
    /// mirror may still have it.
    public var isMissingFile: Bool {
        switch self {
        case .http(let status): status == 404 || status == 410
        case .remoteRefused: true
        default: false
        }
    }

    /// An outage: the attempt never reached the origin (or the proxy in front of it), or the
    /// object storage its bytes go to.
    public var isOutage: Bool {
        switch self {
        case .unreachable, .proxy, .storageUnreachable: true
        default: false
        }
    }
}

/// What a job's earlier attempts say, for deciding after the one that just ended.
public struct AttemptHistory: Sendable, Equatable {
    /// Attempts that reached the origin (or were cut) since the retry budget last started,
    /// the one that just ended included if it did.
    public var counted: Int
    /// Every attempt the job started, outages included.
    public var total: Int
    /// Since the job last received a byte, or since its first attempt if it never did.
    public var sinceProgress: Duration
    /// Since the disk first filled under the job, while it waits for space; zero otherwise.
    public var sinceDiskFull: Duration

    public init(counted: Int, total: Int, sinceProgress: Duration, sinceDiskFull: Duration = .zero) {
        self.counted = counted
        self.total = total
        self.sinceProgress = sinceProgress
        self.sinceDiskFull = sinceDiskFull
    }
}

public enum AttemptDecision: Sendable, Equatable {
    /// The body is complete: verify and move it into place.
    case finish
    /// Try again after this long; `outage` when the attempt does not count against the budget.
    case retry(after: Duration, cause: DownloadError, outage: Bool = false)
    /// The disk filled: back to the queue, partial data kept, until space is free again.
    case waitForDisk(cause: DownloadError)
    case fail(DownloadError)
}

/// Which outcomes are worth another attempt, and when. Pure: randomness comes in as a value in 0..<1.
/// Outages (attempts that never reached the origin) do not use up `maxAttempts`: they retry until
/// `noProgressTimeout` has passed without a byte, as a background download waits for the network.
public struct RetryPolicy: Sendable {
    public var maxAttempts: Int
    public var baseDelay: Duration
    public var maxDelay: Duration
    public var noProgressTimeout: Duration
    /// How long a job whose disk filled waits for space before it fails with `disk_full`.
    public var diskWait: Duration

    public init(maxAttempts: Int, baseDelay: Duration, maxDelay: Duration = .seconds(300),
                noProgressTimeout: Duration = .seconds(86400), diskWait: Duration = .seconds(86400)) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.noProgressTimeout = noProgressTimeout
        self.diskWait = diskWait
    }

    /// `retryAfter` is the origin's Retry-After.
    public func decide(_ outcome: AttemptOutcome, history: AttemptHistory, retryAfter: Duration?, jitter: Double) -> AttemptDecision {
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
        case .unreachable(let message):
            transient = DownloadError(code: ErrorCode.network, message: message)
        case .storageUnavailable(let message), .storageUnreachable(let message):
            transient = DownloadError(code: ErrorCode.storage, message: message)
        case .storageRefused(let message):
            return .fail(DownloadError(code: ErrorCode.storage, message: message))
        case .tls(let message):
            // Trying again meets the same certificate: only the operator (a CA bundle) can fix it.
            return .fail(DownloadError(code: ErrorCode.tls, message: message))
        case .loginFailed(let message):
            // The same credentials meet the same refusal: only a new URL or `auth` helps.
            return .fail(DownloadError(code: ErrorCode.loginFailed, message: message))
        case .remoteRefused(let message):
            return .fail(DownloadError(code: ErrorCode.remoteRefused, message: message))
        case .hostKey(let message):
            return .fail(DownloadError(code: ErrorCode.hostKey, message: message))
        case .tooLarge:
            return .fail(DownloadError(code: ErrorCode.tooLarge, message: "the body exceeds the configured maximum size"))
        case .blockedAddress(let address):
            return .fail(DownloadError(code: ErrorCode.blockedAddress, message: "connecting to \(address) is not allowed"))
        case .diskFull:
            let cause = DownloadError(code: ErrorCode.diskFull, message: "no space left on the device")
            return history.sinceDiskFull < diskWait ? .waitForDisk(cause: cause) : .fail(cause)
        case .fileError(let message):
            return .fail(DownloadError(code: ErrorCode.fileError, message: message))
        case .unsupportedScheme(let scheme):
            return .fail(DownloadError(code: ErrorCode.unsupportedScheme, message: "redirected to unsupported scheme \(scheme)"))
        case .tooManyRedirects:
            return .fail(DownloadError(code: ErrorCode.tooManyRedirects, message: "too many redirects"))
        }
        if outcome.isOutage {
            guard history.sinceProgress < noProgressTimeout else { return .fail(transient) }
            return .retry(after: delay(afterAttempt: history.total, retryAfter: retryAfter, jitter: jitter), cause: transient, outage: true)
        }
        guard history.counted < maxAttempts else { return .fail(transient) }
        return .retry(after: delay(afterAttempt: history.counted, retryAfter: retryAfter, jitter: jitter), cause: transient)
    }

    /// Exponential backoff (base × 2^(n-1)) with ±25 % jitter, capped; a Retry-After is honoured as a minimum.
    public func delay(afterAttempt attempts: Int, retryAfter: Duration?, jitter: Double) -> Duration {
        let doublings = max(0, min(attempts - 1, 30))
        let backoff = min(maxDelay, baseDelay * (1 << doublings)) * (0.75 + 0.5 * jitter)
        guard let retryAfter else { return backoff }
        return max(backoff, min(retryAfter, maxDelay))
    }
}
