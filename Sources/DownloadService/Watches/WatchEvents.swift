import DownloadCore
import Persistence

extension WebhookEvents {
    /// `watch.changed`: a check replaced the file. To the watch's webhookURL and the global subscriber.
    func watchChanged(_ watch: Watch, download: Download, previousSHA256: String?, now: Int64) -> WebhookEvent {
        envelope(type: "watch.changed", urls: urls(of: watch), session: download.session, now: now) { json in
            json.beginObject()
            json.key("watch")
            WatchJSON.write(watch, into: &json)
            json.key("download")
            DownloadJSON.write(download, waitingFor: nil, into: &json)
            json.field("previousSha256", previousSHA256)
            json.endObject()
        }
    }

    /// `watch.failed`: a check failed after the last one succeeded.
    func watchFailed(_ watch: Watch, session: String, now: Int64) -> WebhookEvent {
        envelope(type: "watch.failed", urls: urls(of: watch), session: session, now: now) { json in
            WatchJSON.write(watch, into: &json)
        }
    }

    private func urls(of watch: Watch) -> [String] {
        [watch.validSpec?.download.webhookURL, globalURL].compactMap { $0 }
    }
}
