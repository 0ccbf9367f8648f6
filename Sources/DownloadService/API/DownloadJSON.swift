import DownloadCore

/// The Download resource as the API and webhooks show it. Of the origin request headers only the
/// names are shown: their values may be credentials, and are never shown anywhere.
enum DownloadJSON {
    /// A job's JSON showing no `waitingFor`, and where its `null` is, so that the same bytes can
    /// show the scheduler's reason: a POST's 201 is the event log's copy with the reason put in.
    struct Unplanned: Sendable {
        let bytes: [UInt8]
        /// The offset of the `null` of `"waitingFor":null` in `bytes`.
        let waitingForAt: Int

        init(_ d: Download) {
            var json = JSONWriter(capacity: 1024)
            waitingForAt = DownloadJSON.write(d, waitingFor: nil, into: &json)
            bytes = json.bytes
        }

        func showing(_ waitingFor: WaitingFor?) -> [UInt8] {
            guard let waitingFor else { return bytes }
            var shown: [UInt8] = []
            shown.reserveCapacity(bytes.count + 16)
            shown += bytes[..<waitingForAt]
            JSONString.append(waitingFor.rawValue, to: &shown)
            shown += bytes[(waitingForAt + 4)...]
            return shown
        }
    }

    /// Writes the job — the Upload resource for an upload — and returns the offset in the written
    /// bytes where its `waitingFor` value begins.
    @discardableResult
    static func write(_ d: Download, waitingFor: WaitingFor?, liveBytes: Int64? = nil, into json: inout JSONWriter) -> Int {
        if let plan = d.upload { return UploadJSON.write(d, plan: plan, waitingFor: waitingFor, liveBytes: liveBytes, into: &json) }
        json.beginObject()
        json.field("id", d.id)
        json.field("kind", d.direction.rawValue)
        json.field("url", URLUserInfo.masked(d.url))
        json.field("destination", d.destination.path)
        json.field("session", d.session)
        json.field("state", d.state.rawValue)
        json.key("waitingFor")
        let waitingForAt = json.count
        json.value(waitingFor?.rawValue)
        writeScheduling(d, into: &json)
        json.field("bytesReceived", d.bytesShown(liveBytes: liveBytes))
        json.field("bytesExpected", d.bytesExpected)
        json.field("attempts", d.attempts)
        json.field("httpStatus", d.httpStatus)
        writeError(d.error, into: &json)
        json.field("sha256", d.sha256 ?? d.expectedSHA256)
        json.field("webhookURL", d.webhookURL)
        json.field("headers", d.headers.map(\.name))
        json.field("overwrite", d.overwrite)
        json.field("urlRefresh", d.urlRefresh)
        writeTimes(d, into: &json)
        json.rawField("metadata", d.metadata)
        json.field("onConflict", d.renameOnConflict ? "rename" : d.overwrite ? "overwrite" : "fail")
        json.field("checksum", d.checksum?.description)
        json.field("checksumURL", d.checksumURL)
        json.field("resourceTimeout", d.resourceTimeout)
        json.field("path", d.path)
        json.field("mirrors", d.mirrors.map(URLUserInfo.masked))
        json.field("connections", d.connections)
        json.field("maxBytesPerSecond", d.maxBytesPerSecond)
        json.field("objectETag", d.objectETag)
        json.field("objectVersionId", d.objectVersionID)
        // Only a watch's check has one: every other job's body stays as it was.
        if let watch = d.watch { json.field("watch", watch.id) }
        json.endObject()
        return waitingForAt
    }

    /// When and how a job (of either kind) is scheduled, and what it expects to move, as given.
    static func writeScheduling(_ d: Download, into json: inout JSONWriter) {
        json.field("earliestBeginDate", date: d.earliestBeginDate)
        json.field("discretionary", d.discretionary)
        json.field("priority", d.priority)
        json.field("expectedBytesToSend", d.expectedBytesToSend)
        json.field("expectedBytesToReceive", d.expectedBytesToReceive)
    }

    /// When a job (of either kind) was created, started and finished, and tries again.
    static func writeTimes(_ d: Download, into json: inout JSONWriter) {
        json.field("createdAt", date: d.createdAt)
        json.field("startedAt", date: d.startedAt)
        json.field("finishedAt", date: d.finishedAt)
        json.field("nextAttemptAt", date: d.nextAttemptAt)
    }

    /// `"error": {"code", "message"}` or `"error": null` (under another `name`, if given).
    static func writeError(_ error: DownloadError?, as name: StaticString = "error", into json: inout JSONWriter) {
        json.key(name)
        guard let error else { return json.value(nil as String?) }
        json.beginObject()
        json.field("code", error.code)
        json.field("message", error.message)
        json.endObject()
    }

    /// The job as the event log (`GET /events`) keeps it: as stored, without what the scheduler knows.
    @Sendable static func logged(_ d: Download) -> [UInt8] { encode(d, waitingFor: nil) }

    static func encode(_ d: Download, waitingFor: WaitingFor?, liveBytes: Int64? = nil) -> [UInt8] {
        var json = JSONWriter(capacity: 1024)
        write(d, waitingFor: waitingFor, liveBytes: liveBytes, into: &json)
        return json.bytes
    }
}
