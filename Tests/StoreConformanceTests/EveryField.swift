import DownloadCore
import Persistence

/// A job with every field set, none to its default, each variant to other values than the next:
/// so that a column lost, swapped with another or not written shows as a field that differs.
/// Booleans alternate between variants (odd ones true).
func everyFieldSet(_ id: String, variant v: Int, state: DownloadState = .queued, revision: Int64 = 0) -> Download {
    let n = Int64(v)
    return Download(
        id: id, url: "http://v\(v).example:8080/file?v=\(v)", destination: Destination(stored: "files/v\(v)/\(id).bin"),
        session: "session-\(v)", state: state, earliestBeginDate: 1_000 * n, discretionary: v % 2 == 1, priority: 0.125 * Double(v),
        expectedBytesToSend: 10 * n, expectedBytesToReceive: (1 << 40) + n, bytesReceived: 100 + n, bytesExpectedFromOrigin: 2_000 + n,
        attempts: 3 + v, httpStatus: 500 + v, error: DownloadError(code: "code-\(v)", message: "message \(v): \"quoted\", ünïcode"),
        sha256: String(repeating: String(v), count: 64), expectedSHA256: String(repeating: "a\(v)", count: 32),
        webhookURL: "https://hooks.example/v\(v)",
        headers: [OriginHeader(name: "X-Variant", value: "v\(v)"), OriginHeader(name: "Authorization", value: "Bearer secret-\(v)")],
        overwrite: v % 2 == 1, validator: "\"etag-\(v)\"", createdAt: 10_000 + n, startedAt: 20_000 + n, finishedAt: 30_000 + n,
        runAt: 40_000 + n, nextAttemptAt: 50_000 + n, hostKey: "v\(v).example:8080", outageAttempts: v, progressAt: 60_000 + n,
        diskFullSince: 70_000 + n, metadata: #"{"variant":\#(v)}"#, attemptsBeforeRetry: 1 + v, revision: revision,
        urlRefresh: v % 2 == 1, awaitingURLSince: 80_000 + n,
        checksum: Checksum(algorithm: .md5, hex: String(repeating: String(v), count: 32)), checksumURL: "https://sums.example/v\(v).md5",
        renameOnConflict: v % 2 == 1, path: "files/v\(v)/\(id) (1).bin", resourceTimeout: "\(v)h",
        mirrors: ["http://mirror-\(v).example/a", "https://other-\(v).example/b"], connections: 4 + v, maxBytesPerSecond: 65_536 * n,
        mirrorIndex: v, mirrorMisses: v,
        ranges: [RangeProgress(start: 0, end: 100, next: 10 * n), RangeProgress(start: 100, end: 200, next: 100 + n)],
        objectUpload: ObjectUpload(key: "files/v\(v)/\(id).bin", uploadID: "upload-\(v)",
                                   parts: [ObjectUpload.Part(number: 1, size: 5_242_880 + n, etag: "\"part-\(v)\"")],
                                   digestState: "v1:state\(v):"),
        objectETag: "\"object-\(v)\"", objectVersionID: "version-\(v)",
        upload: UploadPlan(
            source: Destination(stored: "exports/v\(v).csv"), method: v % 2 == 1 ? .post : .put, uploadProtocol: v % 2 == 1 ? .tus : .plain,
            contentType: "text/v\(v)", deleteSource: v % 2 == 1, replyDestination: Destination(stored: "replies/v\(v).json"),
            pin: SourcePin(size: 1_000 + n, modifiedAt: 1_764_900_000_000_000_000 + n),
            reply: UploadReply(status: 200 + v, contentType: "application/v\(v)", location: "https://up.example/\(v)",
                               etag: "\"reply-\(v)\"", body: "reply \(v)")),
        watch: WatchLink(id: "watch-\(v)", etag: "\"feed-\(v)\"", lastModified: "Mon, 0\(v % 10) Mar 2026 10:00:00 GMT",
                         sha256: String(repeating: "\(v % 10)", count: 64)))
}

/// Every column's value of `job`, in order.
func columnValues(_ job: Download) -> [ColumnValue] {
    DownloadTable.values(job, DownloadTable.allColumns, as: ColumnValue.self)
}

/// A job whose client columns (`ColumnOwner.client`, and those of `alsoKeeping`) hold `client`'s
/// fields and every other column `others`'s, made through the table.
func mixing(client: Download, others: Download, alsoKeeping owners: Set<ColumnOwner> = []) throws -> Download {
    let clients = columnValues(client), rest = columnValues(others)
    return try DownloadTable.download(from: Cells(DownloadTable.columns.indices.map {
        let owner = DownloadTable.columns[$0].owner
        return owner == .client || owners.contains(owner) ? clients[$0] : rest[$0]
    }))
}

/// A row of values at hand, as a backend would read one.
struct Cells: ColumnReading {
    var values: [ColumnValue]

    init(_ values: [ColumnValue]) {
        self.values = values
    }

    var columnCount: Int { values.count }

    func value(at position: Int, as kind: ColumnKind) -> ColumnValue {
        values[position]
    }
}
