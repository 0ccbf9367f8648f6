/// A watch (`POST /watches`): one URL's file kept current at its destination. Its checks are
/// ordinary download jobs that carry a `WatchLink`; one of them is live at any time (queued for
/// the next check, running, or paused with the watch), which keeps the destination owned.
/// Times are milliseconds since the Unix epoch.
public struct Watch: Sendable, Equatable {
    public var id: String
    /// The fields as given — `POST /watches`'s body with every `PATCH` merged in — headers with
    /// their values: each check is made from them (`WatchSpec`).
    public var spec: [String: JSONValue]
    public var destination: Destination
    public var state: WatchState
    /// The check job live now (or the last one, once it ended); nil before the first.
    public var checkID: String?
    public var nextCheckAt: Int64?
    public var lastCheckedAt: Int64?
    public var lastChangedAt: Int64?
    public var lastResult: WatchResult?
    public var lastError: DownloadError?
    /// The validators of the current file, sent as If-None-Match and If-Modified-Since.
    public var etag: String?
    public var lastModified: String?
    /// The digest of the current file, as the last check that changed it wrote it.
    public var sha256: String?
    public var checks: Int
    public var changes: Int
    public var createdAt: Int64
    /// Moved on by every stored change (the ETag); kept by the store.
    public var revision: Int64

    public init(id: String, spec: [String: JSONValue], destination: Destination, createdAt: Int64) {
        self.id = id
        self.spec = spec
        self.destination = destination
        state = .active
        checks = 0
        changes = 0
        self.createdAt = createdAt
        revision = 0
    }

    /// What a check job of this watch carries: the validators and digest of the current file.
    public var link: WatchLink {
        WatchLink(id: id, etag: etag, lastModified: lastModified, sha256: sha256)
    }
}

public enum WatchState: String, Sendable, CaseIterable {
    case active, paused
}

/// How a check ended.
public enum WatchResult: String, Sendable, CaseIterable {
    /// The file was replaced by a new one.
    case changed
    /// `304`, or a `200` with the digest of the current file.
    case unchanged
    /// The check's download failed for good.
    case failed
}

/// What makes a download job a watch's check: the watch, and what the current file is (its
/// validators for the conditional request, its digest to tell an unchanged body).
public struct WatchLink: Sendable, Equatable {
    public var id: String
    public var etag: String?
    public var lastModified: String?
    public var sha256: String?

    public init(id: String, etag: String? = nil, lastModified: String? = nil, sha256: String? = nil) {
        self.id = id
        self.etag = etag
        self.lastModified = lastModified
        self.sha256 = sha256
    }

    /// The conditional request's headers: If-None-Match with the ETag, If-Modified-Since with
    /// Last-Modified, each when known.
    public var conditionalHeaders: [OriginHeader] {
        [etag.map { OriginHeader(name: "If-None-Match", value: $0) },
         lastModified.map { OriginHeader(name: "If-Modified-Since", value: $0) }].compactMap { $0 }
    }
}
