/// What every job's submission sets, download or upload, by the same rules
/// (`SubmissionValidator.validateJobFields`).
public protocol SubmittedJob {
    var session: String { get set }
    var earliestBeginDate: Int64? { get set }
    var discretionary: Bool { get set }
    var priority: Double { get set }
    var expectedBytesToSend: Int64? { get set }
    var expectedBytesToReceive: Int64? { get set }
    var webhookURL: String? { get set }
    var headers: [OriginHeader] { get set }
    /// `metadata` as JSON text.
    var metadata: String? { get set }
    var urlRefresh: Bool { get set }
    var resourceTimeout: String? { get set }
    var maxBytesPerSecond: Int64? { get set }
}

/// A validated `POST /downloads` body.
public struct NewDownload: SubmittedJob, Sendable, Equatable {
    public var url: String
    public var parsedURL: HTTPURL
    public var destination: Destination
    public var session: String = "default"
    public var earliestBeginDate: Int64?
    public var discretionary = false
    public var priority = 0.5
    public var expectedBytesToSend: Int64?
    public var expectedBytesToReceive: Int64?
    public var webhookURL: String?
    public var headers: [OriginHeader] = []
    public var sha256: String?
    public var overwrite = false
    /// `metadata` as JSON text.
    public var metadata: String?
    public var urlRefresh = false
    public var checksum: Checksum?
    public var checksumURL: String?
    /// `onConflict: rename`.
    public var renameOnConflict = false
    public var resourceTimeout: String?
    public var mirrors: [String] = []
    /// nil: the service's default (`FETCHD_CONNECTIONS_PER_DOWNLOAD`).
    public var connections: Int?
    public var maxBytesPerSecond: Int64?

    public init(url: String, parsedURL: HTTPURL, destination: Destination) {
        self.url = url
        self.parsedURL = parsedURL
        self.destination = destination
    }

    /// The queued job this submission becomes.
    public func makeDownload(id: String, now: Int64) -> Download {
        Download(
            id: id, url: url, destination: destination, session: session, state: .queued,
            earliestBeginDate: earliestBeginDate, discretionary: discretionary, priority: priority,
            expectedBytesToSend: expectedBytesToSend, expectedBytesToReceive: expectedBytesToReceive,
            bytesReceived: 0, bytesExpectedFromOrigin: nil, attempts: 0, httpStatus: nil, error: nil,
            sha256: nil, expectedSHA256: sha256, webhookURL: webhookURL, headers: headers, overwrite: overwrite,
            validator: nil, createdAt: now, startedAt: nil, finishedAt: nil,
            runAt: max(now, earliestBeginDate ?? now), nextAttemptAt: nil, hostKey: parsedURL.hostKey,
            metadata: metadata, urlRefresh: urlRefresh, checksum: checksum, checksumURL: checksumURL,
            renameOnConflict: renameOnConflict, path: knownPath, resourceTimeout: resourceTimeout,
            mirrors: mirrors, connections: connections ?? 1, maxBytesPerSecond: maxBytesPerSecond)
    }

    /// The file's path when the submission already decides it: a named file that is never renamed.
    var knownPath: String? {
        destination.isDirectory || renameOnConflict ? nil : destination.relativePath
    }
}

public struct FieldError: Sendable, Equatable {
    public var field: String
    public var message: String
    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }
}

public struct FieldErrors: Error, Sendable, Equatable {
    public var errors: [FieldError]
    public init(_ errors: [FieldError]) { self.errors = errors }
}
