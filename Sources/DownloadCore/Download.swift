/// A download job as the service knows it. Times are milliseconds since the Unix epoch.
public struct Download: Sendable, Equatable {
    public var id: String
    public var url: String
    public var destination: Destination
    public var session: String
    public var state: DownloadState
    public var earliestBeginDate: Int64?
    public var discretionary: Bool
    public var priority: Double
    public var expectedBytesToSend: Int64?
    public var expectedBytesToReceive: Int64?
    public var bytesReceived: Int64
    /// The size the origin announced; nil until known.
    public var bytesExpectedFromOrigin: Int64?
    public var attempts: Int
    public var httpStatus: Int?
    public var error: DownloadError?
    public var sha256: String?
    public var expectedSHA256: String?
    public var webhookURL: String?
    /// Extra request headers for the origin; never shown in API responses, logs or webhooks.
    public var headers: [OriginHeader]
    public var overwrite: Bool
    /// ETag (or else Last-Modified) of the partial data, sent as If-Range when resuming.
    public var validator: String?
    public var createdAt: Int64
    public var startedAt: Int64?
    public var finishedAt: Int64?
    /// When a queued job is due: the later of earliestBeginDate and the retry time.
    public var runAt: Int64
    public var nextAttemptAt: Int64?
    /// "host:port" of the URL, the key of per-host limits.
    public var hostKey: String
    /// Attempts since the retry budget last started that never reached the origin (outages), met
    /// a full disk, or were cut by fetchd's own stop or crash or by a client's change of the
    /// request: they do not use up `FETCHD_MAX_ATTEMPTS`.
    public var outageAttempts: Int
    /// When the job last received a byte, or else when its first attempt started; nil before.
    public var progressAt: Int64?
    /// Since when the job has been waiting for disk space after its disk filled; nil otherwise.
    public var diskFullSince: Int64?
    /// The client's own data: a JSON object as text, returned as given.
    public var metadata: String?
    /// `attempts` when the retry budget last started over (`POST /downloads/{id}/retry`): the
    /// retry policy counts only the attempts since.
    public var attemptsBeforeRetry: Int
    /// Changes with every stored change of the job (the ETag); set by the store, ignored when written.
    public var revision: Int64
    /// A 401, 403 or 410 from the origin makes the job wait for a new URL instead of failing.
    public var urlRefresh: Bool
    /// Since when the job waits for a new URL (URL refresh); nil when it does not.
    public var awaitingURLSince: Int64?
    /// The body's `checksum`: the digest the file must have, in any algorithm.
    public var checksum: Checksum?
    /// `checksumURL`: a digest file the finished file must match, fetched before each attempt.
    public var checksumURL: String?
    /// `onConflict: rename`: when the name is taken at placement, the file goes to the first free
    /// `name (1).ext`, `name (2).ext`, ….
    public var renameOnConflict: Bool
    /// The file's path under the download root once it is known (the chosen name of a directory
    /// destination, the free name of a rename); nil before.
    public var path: String?
    /// `resourceTimeout` as the client gave it: a duration (`Units.duration`).
    public var resourceTimeout: String?
    /// The same file elsewhere: attempts go round `url` then these (`mirrorIndex`).
    public var mirrors: [String]
    /// Parallel connections for the file (byte ranges at once), 1–16.
    public var connections: Int
    /// The job's own rate cap in bytes per second; nil for none.
    public var maxBytesPerSecond: Int64?
    /// Which URL attempts go to: 0 for `url`, i for `mirrors[i - 1]`.
    public var mirrorIndex: Int
    /// URLs in a row that answered 404 or 410: the job fails once every URL has.
    public var mirrorMisses: Int
    /// A segmented download's byte ranges and how far each got (empty for one connection): the
    /// partial file is then preallocated to the full size, and each range resumes on its own.
    public var ranges: [RangeProgress]
    /// An object destination's multipart upload under way (or one left to abort); nil for none.
    public var objectUpload: ObjectUpload? {
        get { objectUploadBox?.value }
        set { objectUploadBox = newValue.map(Boxed.init) }
    }
    private var objectUploadBox: Boxed<ObjectUpload>?
    /// The stored object's ETag and version, once completed into a bucket.
    public var objectETag: String?
    public var objectVersionID: String?
    /// What makes the job an upload (the file it sends, how, the reply); nil for a download.
    public var upload: UploadPlan? {
        get { uploadBox?.value }
        set { uploadBox = newValue.map(Boxed.init) }
    }
    private var uploadBox: Boxed<UploadPlan>?
    /// The watch whose check this job is, with what the current file is; nil for any other job.
    public var watch: WatchLink? {
        get { watchBox?.value }
        set { watchBox = newValue.map(Boxed.init) }
    }
    private var watchBox: Boxed<WatchLink>?

    public init(
        id: String,
        url: String,
        destination: Destination,
        session: String,
        state: DownloadState,
        earliestBeginDate: Int64?,
        discretionary: Bool,
        priority: Double,
        expectedBytesToSend: Int64?,
        expectedBytesToReceive: Int64?,
        bytesReceived: Int64,
        bytesExpectedFromOrigin: Int64?,
        attempts: Int,
        httpStatus: Int?,
        error: DownloadError?,
        sha256: String?,
        expectedSHA256: String?,
        webhookURL: String?,
        headers: [OriginHeader],
        overwrite: Bool,
        validator: String?,
        createdAt: Int64,
        startedAt: Int64?,
        finishedAt: Int64?,
        runAt: Int64,
        nextAttemptAt: Int64?,
        hostKey: String,
        outageAttempts: Int = 0,
        progressAt: Int64? = nil,
        diskFullSince: Int64? = nil,
        metadata: String? = nil,
        attemptsBeforeRetry: Int = 0,
        revision: Int64 = 0,
        urlRefresh: Bool = false,
        awaitingURLSince: Int64? = nil,
        checksum: Checksum? = nil,
        checksumURL: String? = nil,
        renameOnConflict: Bool = false,
        path: String? = nil,
        resourceTimeout: String? = nil,
        mirrors: [String] = [],
        connections: Int = 1,
        maxBytesPerSecond: Int64? = nil,
        mirrorIndex: Int = 0,
        mirrorMisses: Int = 0,
        ranges: [RangeProgress] = [],
        objectUpload: ObjectUpload? = nil,
        objectETag: String? = nil,
        objectVersionID: String? = nil,
        upload: UploadPlan? = nil,
        watch: WatchLink? = nil
    ) {
        self.id = id
        self.url = url
        self.destination = destination
        self.session = session
        self.state = state
        self.earliestBeginDate = earliestBeginDate
        self.discretionary = discretionary
        self.priority = priority
        self.expectedBytesToSend = expectedBytesToSend
        self.expectedBytesToReceive = expectedBytesToReceive
        self.bytesReceived = bytesReceived
        self.bytesExpectedFromOrigin = bytesExpectedFromOrigin
        self.attempts = attempts
        self.httpStatus = httpStatus
        self.error = error
        self.sha256 = sha256
        self.expectedSHA256 = expectedSHA256
        self.webhookURL = webhookURL
        self.headers = headers
        self.overwrite = overwrite
        self.validator = validator
        self.createdAt = createdAt
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.runAt = runAt
        self.nextAttemptAt = nextAttemptAt
        self.hostKey = hostKey
        self.outageAttempts = outageAttempts
        self.progressAt = progressAt
        self.diskFullSince = diskFullSince
        self.metadata = metadata
        self.attemptsBeforeRetry = attemptsBeforeRetry
        self.revision = revision
        self.urlRefresh = urlRefresh
        self.awaitingURLSince = awaitingURLSince
        self.checksum = checksum
        self.checksumURL = checksumURL
        self.renameOnConflict = renameOnConflict
        self.path = path
        self.resourceTimeout = resourceTimeout
        self.mirrors = mirrors
        self.connections = connections
        self.maxBytesPerSecond = maxBytesPerSecond
        self.mirrorIndex = mirrorIndex
        self.mirrorMisses = mirrorMisses
        self.ranges = ranges
        self.objectUpload = objectUpload
        self.objectETag = objectETag
        self.objectVersionID = objectVersionID
        self.upload = upload
        self.watch = watch
    }

    /// Which way the job moves its file.
    public var direction: Direction { upload == nil ? .download : .upload }

    /// `bytesExpected` of the API: the origin's size once known, else the client's hint.
    public var bytesExpected: Int64? { bytesExpectedFromOrigin ?? expectedBytesToReceive }

    /// Attempts counted against the retry budget: those since the last client retry.
    public var attemptsInBudget: Int { attempts - attemptsBeforeRetry }

    /// When a job with a `resourceTimeout` fails with `timeout` unless completed: that long after
    /// its first attempt started; nil without one, or before the first attempt.
    public var resourceDeadline: Int64? {
        guard let startedAt, let limit = resourceTimeout.flatMap(Units.duration) else { return nil }
        return startedAt + limit.wholeMilliseconds
    }

    /// Every URL of the file: `url`, then the mirrors.
    public var allURLs: [String] { [url] + mirrors }

    /// The URL the next attempt goes to (a shortened mirror list wraps round).
    public var currentURL: String { allURLs[mirrorIndex % allURLs.count] }
}

/// One byte range of a segmented download as stored: bytes `start..<end` of the file, of which
/// `start..<next` are on disk.
public struct RangeProgress: Sendable, Equatable {
    public var start: Int64
    public var end: Int64
    public var next: Int64

    public init(start: Int64, end: Int64, next: Int64) {
        self.start = start
        self.end = end
        self.next = next
    }

    /// `start-end-next,…`: how the stores keep a job's ranges.
    public static func text(_ ranges: [RangeProgress]) -> String? {
        ranges.isEmpty ? nil : ranges.map { "\($0.start)-\($0.end)-\($0.next)" }.joined(separator: ",")
    }

    /// The ranges `text` wrote; none for nil or anything malformed (the job then starts its ranges over).
    public static func parse(_ text: String?) -> [RangeProgress] {
        guard let text, !text.isEmpty else { return [] }
        var ranges: [RangeProgress] = []
        for item in text.split(separator: ",") {
            let numbers = item.split(separator: "-").compactMap { Int64($0) }
            guard numbers.count == 3, numbers[0] <= numbers[2], numbers[2] <= numbers[1] else { return [] }
            ranges.append(RangeProgress(start: numbers[0], end: numbers[1], next: numbers[2]))
        }
        return ranges
    }
}

public struct OriginHeader: Sendable, Equatable, Codable {
    public var name: String
    public var value: String
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// A value kept behind a reference in `Download`: the fields few jobs have (an upload's plan, a
/// multipart upload, a watch's link) would otherwise make every job hundreds of bytes larger, and
/// every job is copied and moved on the way from a row to the API (a list of 100 jobs: 25 % of
/// its CPU went to copying a 1,000-byte `Download` and reading its columns). `TransferRequest`
/// keeps the fields only uploads, buckets and remote files set in one too. Immutable: a change
/// puts a new one in.
public final class Boxed<Value: Sendable & Equatable>: Sendable, Equatable {
    public let value: Value

    public init(_ value: Value) {
        self.value = value
    }

    public static func == (lhs: Boxed, rhs: Boxed) -> Bool { lhs === rhs || lhs.value == rhs.value }
}

/// A stable, machine-readable reason for a failure.
public struct DownloadError: Sendable, Equatable {
    public var code: String
    public var message: String
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }
}

public enum ErrorCode {
    public static let httpStatus = "http_status"
    public static let network = "network"
    public static let timeout = "timeout"
    public static let tooLarge = "too_large"
    public static let checksumMismatch = "checksum_mismatch"
    public static let destinationExists = "destination_exists"
    public static let blockedAddress = "blocked_address"
    public static let unsupportedScheme = "unsupported_scheme"
    public static let diskFull = "disk_full"
    public static let invalidDestination = "invalid_destination"
    public static let rangeNotSatisfiable = "range_not_satisfiable"
    public static let tooManyRedirects = "too_many_redirects"
    public static let fileError = "file_error"
    public static let tls = "tls"
    public static let proxy = "proxy"
    public static let urlExpired = "url_expired"
    /// The digest file at `checksumURL` could not be fetched, or has no digest for the file.
    public static let checksumUnavailable = "checksum_unavailable"
    /// The object storage refused a request no retry fixes; its error code is in the message.
    public static let storage = "storage"
    /// An FTP or SFTP server refused the login.
    public static let loginFailed = "login_failed"
    /// An FTP or SFTP server refused the file for good; its reply is the message.
    public static let remoteRefused = "remote_refused"
    /// The SFTP server's host key is not in FETCHD_SSH_KNOWN_HOSTS, or differs from it.
    public static let hostKey = "host_key"
    /// An upload's source is not the file pinned at submit (another size or modification time),
    /// or is gone.
    public static let sourceChanged = "source_changed"
}

extension DownloadError {
    /// Failure codes whose partial data a retry can go on from: the bytes were fine, the way to
    /// them failed. Not `disk_full`, although API.md lists it: a job whose disk fills waits for
    /// space with its partial data first (FETCHD_DISK_WAIT), and the failure after that can only be
    /// committed to a database on the full disk once the partial data is gone.
    static let resumableCodes: Set<String> = [ErrorCode.network, ErrorCode.timeout, ErrorCode.proxy, ErrorCode.urlExpired]

    /// Whether a job that failed so keeps its partial data for `POST /downloads/{id}/retry`:
    /// the transient failures (network, timeout, proxy, an expired URL, an origin's 408, 429 or
    /// 5xx) once the retries ran out.
    public func isResumable(httpStatus: Int?) -> Bool {
        if Self.resumableCodes.contains(code) { return true }
        guard code == ErrorCode.httpStatus, let status = httpStatus else { return false }
        return status == 408 || status == 429 || (500..<600).contains(status)
    }
}
