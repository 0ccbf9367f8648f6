import DownloadCore

/// A queued job for example.com with the given id, as the store tests build them.
public func makeDownload(_ id: String, destination: String? = nil, session: String = "default", priority: Double = 0.5,
                  runAt: Int64 = 0, createdAt: Int64 = 0) -> Download {
    var submission = NewDownload(url: "http://example.com/\(id)", parsedURL: HTTPURL(scheme: "http", host: "example.com", port: 80),
                                 destination: Destination(stored: destination ?? "files/\(id)"))
    submission.session = session
    submission.priority = priority
    var download = submission.makeDownload(id: id, now: createdAt)
    download.runAt = runAt
    return download
}
