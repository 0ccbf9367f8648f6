/// Identifies a transfer started on a `TransferEngine`, for `cancel(_:)`.
public struct TransferID: Hashable, Sendable, CustomStringConvertible {
    let rawValue: UInt64

    /// Public so that stand-ins for the engine in tests can hand out ids.
    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    public var description: String { "transfer-\(rawValue)" }
}

/// Reported while a transfer runs, at most about four times a second.
public struct TransferProgress: Sendable, Equatable {
    public var bytesOnDisk: Int64
    /// Total size of the representation (Content-Length plus the resume offset, or the
    /// Content-Range total), when the origin said.
    public var bytesExpected: Int64?
    /// ETag (else Last-Modified) of the representation being written to the file, once its
    /// headers arrived: what a resume after a crash must send as If-Range.
    public var validator: String?
    /// The whole body is in and the connection is done with; the file is being synced and hashed,
    /// and `onComplete` follows. The last report of an attempt that completes (not for a segment).
    public var bodyComplete: Bool
    /// The response is the first part asked for (`TransferRequest.firstPartLength`) of a larger
    /// representation: the origin honours `Range`, and the transfer ends where the part does.
    public var isFirstPart: Bool
    /// File sink, once the response's head is in: where in the file its body started (0 for a
    /// response that replaces the file, the resume offset for a 206 that continues it).
    public var bodyStart: Int64? = nil
    /// The response's `Content-Disposition` and the URL it came from (after redirects), once its
    /// head is in: what a file named by the origin is named from.
    public var contentDisposition: String? = nil
    public var effectiveURL: String? = nil
    /// Bytes of the request body sent so far (`TransferRequest.bodyFile`): an upload's progress.
    public var bytesSent: Int64 = 0

    public init(bytesOnDisk: Int64, bytesExpected: Int64?, validator: String? = nil, bodyComplete: Bool = false,
                isFirstPart: Bool = false) {
        self.bytesOnDisk = bytesOnDisk
        self.bytesExpected = bytesExpected
        self.validator = validator
        self.bodyComplete = bodyComplete
        self.isFirstPart = isFirstPart
    }
}

/// Why an attempt did not finish at the HTTP level.
public enum TransferFailure: Error, Sendable, Equatable {
    /// Connect refused or reset, DNS, a body cut short, receive errors; curl's message.
    case network(String)
    /// Connect timeout, stall, or total timeout.
    case timeout(String)
    /// `maxBytes` exceeded.
    case tooLarge
    /// The address curl was about to connect to, refused by the `AddressPolicy`.
    case blockedAddress(String)
    /// ENOSPC or EDQUOT while writing the file.
    case diskFull
    /// Any other error opening, writing or syncing the file.
    case fileError(String)
    /// A scheme other than http or https, at the start or on a redirect.
    case unsupportedScheme(String)
    case tooManyRedirects
    /// A 206 whose Content-Range does not continue the partial file.
    case rangeMismatch(String)
    /// The peer's certificate failed verification, or the TLS handshake was refused.
    case tls(String)
    /// The configured proxy could not be reached, or refused to carry the request.
    case proxy(String)
    /// The origin could not be reached at all: its name did not resolve, the connection was
    /// refused or unreachable, or connecting timed out. No request was sent.
    case unreachable(String)
    /// An FTP or SFTP server refused the login.
    case loginFailed(String)
    /// An FTP or SFTP server refused the file for good (an FTP 5xx reply, no such file,
    /// permission denied): the server's reply.
    case remoteRefused(String)
    /// The SFTP server's host key is not in the known hosts, or differs from the key there.
    case hostKey(String)
    /// The object storage the bytes go to failed (an object destination's attempt).
    case storage(ObjectStorageFailure)
    case cancelled
}

/// The outcome of one attempt, delivered once to `onComplete`.
public struct TransferResult: Sendable {
    /// Final status (after redirects); nil if no response arrived.
    public var httpStatus: Int?
    /// nil when the transfer finished at the HTTP level, whatever the status (4xx and 5xx included).
    public var failure: TransferFailure?
    /// File sink: the file's length after the attempt.
    public var bytesOnDisk: Int64
    /// Body bytes received in this attempt, written or discarded.
    public var bytesThisAttempt: Int64
    public var bytesExpected: Int64?
    /// File sink, after a 2xx (or a 416 that found the file complete) only: lowercase hex SHA-256
    /// of the whole file.
    public var sha256: String?
    /// File sink, when `sha256` is set and the request asked for `extraDigest`: that digest of
    /// the whole file, lowercase hex.
    public var extraDigest: String?
    /// ETag if the response had one, else Last-Modified.
    public var validator: String?
    /// The final response's `Content-Disposition` value, as sent: for a directory destination the
    /// service reads the file name from it (`FileName.choose` in DownloadCore).
    public var contentDisposition: String?
    /// Seconds from now, from Retry-After (delta-seconds or HTTP-date).
    public var retryAfter: Double?
    /// A request body's SHA-256, once the whole of it went: from the engine when the body's range
    /// asked for it (`TransferRequest.FileRange.hashed`), otherwise set by an upload's attempt.
    public var bodySHA256: String? = nil
    /// Bytes of the request body sent (`TransferRequest.bodyFile`), as far as curl sent them.
    public var bytesSent: Int64 = 0
    /// Memory sink: the body, truncated to the sink's limit.
    public var responseBody: [UInt8]
    /// With `TransferRequest.keepsResponseHeaders`: the final response's fields, names in lower case.
    public var responseHeaders: [(name: String, value: String)] = []
    public var effectiveURL: String?
    /// The first part the request asked for (`TransferRequest.firstPartLength`) is in the file,
    /// and the representation goes on past it: no failure, no digest; `bytesOnDisk` is where the
    /// part ended and `bytesExpected` the whole size, when the origin said.
    public var partReceived = false
    /// File sink: the whole representation is in the file and synced (with or without a digest:
    /// `TransferRequest.hashesFile`).
    public var bodyComplete = false

    /// Public so that callers can build results for their own tests.
    public init(
        httpStatus: Int? = nil, failure: TransferFailure? = nil, bytesOnDisk: Int64 = 0,
        bytesThisAttempt: Int64 = 0, bytesExpected: Int64? = nil, sha256: String? = nil,
        validator: String? = nil, retryAfter: Double? = nil, responseBody: [UInt8] = [],
        effectiveURL: String? = nil
    ) {
        self.httpStatus = httpStatus
        self.failure = failure
        self.bytesOnDisk = bytesOnDisk
        self.bytesThisAttempt = bytesThisAttempt
        self.bytesExpected = bytesExpected
        self.sha256 = sha256
        self.validator = validator
        self.retryAfter = retryAfter
        self.responseBody = responseBody
        self.effectiveURL = effectiveURL
    }
}

extension TransferResult {
    /// The first kept response header called `name` (any case).
    public func responseHeader(_ name: String) -> String? {
        let name = name.lowercased()
        return responseHeaders.first { $0.name == name }?.value
    }
}
