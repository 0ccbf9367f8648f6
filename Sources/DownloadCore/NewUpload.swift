/// A validated `POST /uploads` body: the source to send and how, with the fields every job takes.
public struct NewUpload: SubmittedJob, Sendable, Equatable {
    public var url: String
    public var parsedURL: HTTPURL
    public var source: Destination
    /// The object an `s3://bucket/key` URL names (the configured object storage's); nil for any other URL.
    public var object: Destination?
    public var method: UploadMethod = .put
    public var uploadProtocol: UploadProtocol = .plain
    public var contentType = "application/octet-stream"
    public var deleteSource = false
    /// What the source must match before anything is sent.
    public var checksum: Checksum?
    /// Where the server's answer is saved under the download root (an upload-reply).
    public var replyDestination: Destination?
    public var session = "default"
    public var earliestBeginDate: Int64?
    public var discretionary = false
    public var priority = 0.5
    public var expectedBytesToSend: Int64?
    public var expectedBytesToReceive: Int64?
    public var webhookURL: String?
    public var headers: [OriginHeader] = []
    public var metadata: String?
    public var urlRefresh = false
    public var resourceTimeout: String?
    public var maxBytesPerSecond: Int64?

    public init(url: String, parsedURL: HTTPURL, source: Destination) {
        self.url = url
        self.parsedURL = parsedURL
        self.source = source
    }

    /// The queued job this submission becomes, its source pinned as it is now.
    public func makeDownload(id: String, now: Int64, pin: SourcePin) -> Download {
        Download(
            id: id, url: url, destination: object ?? Destination(stored: ""), session: session, state: .queued,
            earliestBeginDate: earliestBeginDate, discretionary: discretionary, priority: priority,
            expectedBytesToSend: expectedBytesToSend ?? pin.size, expectedBytesToReceive: expectedBytesToReceive,
            bytesReceived: 0, bytesExpectedFromOrigin: nil, attempts: 0, httpStatus: nil, error: nil,
            sha256: nil, expectedSHA256: nil, webhookURL: webhookURL, headers: headers, overwrite: false,
            validator: nil, createdAt: now, startedAt: nil, finishedAt: nil,
            runAt: max(now, earliestBeginDate ?? now), nextAttemptAt: nil, hostKey: parsedURL.hostKey,
            metadata: metadata, urlRefresh: urlRefresh, checksum: checksum, resourceTimeout: resourceTimeout,
            maxBytesPerSecond: maxBytesPerSecond, upload: UploadPlan(source: source, method: method, uploadProtocol: uploadProtocol, contentType: contentType,
                               deleteSource: deleteSource, replyDestination: replyDestination, pin: pin))
    }
}
