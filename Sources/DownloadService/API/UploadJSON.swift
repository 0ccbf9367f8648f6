import DownloadCore

/// The Upload resource as the API, event streams and webhooks show it (an upload job is written
/// so wherever a job is: `DownloadJSON.write` hands it here). Request headers by name only.
enum UploadJSON {
    /// Writes the upload; returns the offset in the written bytes where its `waitingFor` value begins.
    static func write(_ d: Download, plan: UploadPlan, waitingFor: WaitingFor?, liveBytes: Int64?, into json: inout JSONWriter) -> Int {
        json.beginObject()
        json.field("id", d.id)
        json.field("kind", d.direction.rawValue)
        json.field("source", plan.source.path)
        json.field("url", URLUserInfo.masked(d.url))
        json.field("method", plan.method.rawValue)
        json.field("protocol", plan.uploadProtocol.rawValue)
        json.field("contentType", plan.contentType)
        json.field("session", d.session)
        json.field("state", d.state.rawValue)
        json.key("waitingFor")
        let waitingForAt = json.count
        json.value(waitingFor?.rawValue)
        json.field("bytesSent", d.bytesShown(liveBytes: liveBytes))
        json.field("bytesTotal", plan.pin.size)
        json.field("attempts", d.attempts)
        json.field("httpStatus", d.httpStatus)
        DownloadJSON.writeError(d.error, into: &json)
        json.field("sha256", d.sha256)
        json.rawField("reply", plan.reply?.json.jsonText)
        json.field("deleteSource", plan.deleteSource)
        json.field("replyDestination", plan.replyDestination?.path)
        DownloadJSON.writeScheduling(d, into: &json)
        json.field("webhookURL", d.webhookURL)
        json.field("headers", d.headers.map(\.name))
        json.field("urlRefresh", d.urlRefresh)
        json.field("resourceTimeout", d.resourceTimeout)
        json.field("maxBytesPerSecond", d.maxBytesPerSecond)
        json.rawField("metadata", d.metadata)
        DownloadJSON.writeTimes(d, into: &json)
        json.endObject()
        return waitingForAt
    }
}
