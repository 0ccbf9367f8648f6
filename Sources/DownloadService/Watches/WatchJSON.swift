import DownloadCore

/// The Watch resource: its fields as given (headers by name only, passwords in URLs masked) and
/// what its checks found.
enum WatchJSON {
    static func write(_ watch: Watch, into json: inout JSONWriter) {
        let spec = watch.validSpec
        let download = spec?.download
        json.beginObject()
        json.field("id", watch.id)
        json.field("url", download.map { URLUserInfo.masked($0.url) })
        json.field("destination", watch.destination.path)
        switch spec?.timing {
        case .interval?:
            if case .string(let text)? = watch.spec["interval"] { json.field("interval", text) }
            json.field("schedule", nil as String?)
        case .schedule(let cron)?:
            json.field("interval", nil as String?)
            json.field("schedule", cron.text)
        case nil:
            break
        }
        json.field("session", download?.session)
        json.field("priority", download?.priority ?? 0.5)
        json.field("discretionary", download?.discretionary ?? false)
        json.field("webhookURL", download?.webhookURL)
        json.field("headers", download?.headers.map(\.name) ?? [])
        json.rawField("metadata", download?.metadata)
        json.field("maxBytesPerSecond", download?.maxBytesPerSecond)
        json.field("checksumURL", download?.checksumURL)
        json.field("mirrors", download?.mirrors.map(URLUserInfo.masked) ?? [])
        json.field("state", watch.state.rawValue)
        json.field("nextCheckAt", date: watch.state == .active ? watch.nextCheckAt : nil)
        json.field("lastCheckedAt", date: watch.lastCheckedAt)
        json.field("lastChangedAt", date: watch.lastChangedAt)
        json.field("lastResult", watch.lastResult?.rawValue)
        DownloadJSON.writeError(watch.lastError, as: "lastError", into: &json)
        json.field("etag", watch.etag)
        json.field("lastModified", watch.lastModified)
        json.field("sha256", watch.sha256)
        json.field("checks", watch.checks)
        json.field("changes", watch.changes)
        json.field("currentCheck", watch.checkID)
        json.field("createdAt", date: watch.createdAt)
        json.endObject()
    }

    static func encode(_ watch: Watch) -> [UInt8] {
        var json = JSONWriter(capacity: 1024)
        write(watch, into: &json)
        return json.bytes
    }
}
