/// Which way a job moves its file: from a URL to a destination, or from a source to a URL. One
/// fact the layers share — the store, the scheduler, the retry policy, events and webhooks treat
/// both alike — shown to clients as a resource's `kind`.
public enum Direction: String, Sendable, CaseIterable {
    case download
    case upload
}

/// The request an upload's file goes in, over http(s).
public enum UploadMethod: String, Sendable, CaseIterable {
    case put = "PUT"
    case post = "POST"
}

/// How an upload sends its file (`protocol` in `POST /uploads`).
public enum UploadProtocol: String, Sendable, CaseIterable {
    /// One request with the whole file; a failed attempt starts again from byte 0.
    case plain
    /// tus 1.0: the upload resource's URL is kept, and after a fault only the rest is sent.
    case tus
}

/// The source file as it was when the upload was submitted: a source that no longer matches it
/// has changed, and the upload fails with `source_changed` rather than send other bytes.
public struct SourcePin: Sendable, Equatable {
    public var size: Int64
    /// Last modification, nanoseconds since the epoch (as `stat` gives it).
    public var modifiedAt: Int64

    public init(size: Int64, modifiedAt: Int64) {
        self.size = size
        self.modifiedAt = modifiedAt
    }
}

/// What makes a job an upload: the file it sends, how, and what it keeps of the answer. Fixed at
/// submit, but for `reply`, which the attempt that completes (or fails) the upload fills in.
public struct UploadPlan: Sendable, Equatable {
    /// The source's path under `FETCHD_UPLOAD_ROOT` (the destination rules: relative, no escape).
    public var source: Destination
    /// http(s) only.
    public var method: UploadMethod
    public var uploadProtocol: UploadProtocol
    public var contentType: String
    /// Remove the source once the upload completed.
    public var deleteSource: Bool
    /// Where the response body is saved under the download root (an upload-reply), if anywhere.
    public var replyDestination: Destination?
    public var pin: SourcePin
    /// The server's answer to the last request, once there is one.
    public var reply: UploadReply?

    public init(source: Destination, method: UploadMethod = .put, uploadProtocol: UploadProtocol = .plain,
                contentType: String = "application/octet-stream", deleteSource: Bool = false,
                replyDestination: Destination? = nil, pin: SourcePin, reply: UploadReply? = nil) {
        self.source = source
        self.method = method
        self.uploadProtocol = uploadProtocol
        self.contentType = contentType
        self.deleteSource = deleteSource
        self.replyDestination = replyDestination
        self.pin = pin
        self.reply = reply
    }
}

/// The server's answer to an upload's last request, as the Upload resource shows it.
public struct UploadReply: Sendable, Equatable {
    /// Longest body kept as text; a longer one, or one that is not UTF-8, is not kept (`body` nil).
    public static let maxBodyBytes = 64 * 1024

    public var status: Int
    public var contentType: String?
    public var location: String?
    public var etag: String?
    public var body: String?

    public init(status: Int, contentType: String? = nil, location: String? = nil, etag: String? = nil, body: String? = nil) {
        self.status = status
        self.contentType = contentType
        self.location = location
        self.etag = etag
        self.body = body
    }

    /// The reply with `bytes` as its body when they are UTF-8 and short enough to keep.
    public static func body(_ bytes: [UInt8]) -> String? {
        guard bytes.count <= maxBodyBytes else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }
}
