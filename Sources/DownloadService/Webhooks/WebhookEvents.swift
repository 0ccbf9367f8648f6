import DownloadCore
import Persistence

/// Builds the outbox rows for webhook events: `{"type", "timestamp", "data"}`, addressed to the
/// job's own URL and the global subscriber.
struct WebhookEvents: Sendable {
    let globalURL: String?
    private let ids = IDSource()

    init(globalURL: String?) {
        self.globalURL = globalURL
    }

    func newEventID(now: Int64) -> String {
        "msg_" + ids.next(now: now)
    }

    /// `download.completed`, `download.failed` or `download.cancelled` for a job that just reached
    /// that state (`upload.…` for an upload: the events are named by the job's kind).
    func terminal(_ download: Download, now: Int64) -> WebhookEvent {
        let type = download.direction.rawValue + "." + download.state.rawValue
        let urls = [download.webhookURL, globalURL].compactMap { $0 }
        return envelope(type: type, urls: urls, session: download.session, now: now) { json in
            DownloadJSON.write(download, waitingFor: nil, into: &json)
        }
    }

    /// `terminal`, for a job that announces its own end: none for a watch's check, which speaks
    /// through its watch (`watch.changed`, `watch.failed`), nor for a job nobody subscribes to.
    func ended(_ download: Download, now: Int64) -> [WebhookEvent] {
        download.watch != nil || download.webhookURL == nil && globalURL == nil ? [] : [terminal(download, now: now)]
    }

    /// `download.url_expired` (`upload.url_expired`): the server refused the link of a job with URL
    /// refresh; it waits for a new one.
    func urlExpired(_ download: Download, now: Int64) -> WebhookEvent {
        envelope(type: download.direction.rawValue + ".url_expired", urls: [download.webhookURL, globalURL].compactMap { $0 }, session: download.session,
                 now: now) { json in
            DownloadJSON.write(download, waitingFor: .url, into: &json)
        }
    }

    /// `session.finished`: to the global subscriber and every distinct webhookURL in the session.
    func sessionFinished(_ snapshot: SessionSnapshot, now: Int64) -> WebhookEvent {
        let urls = snapshot.webhookURLs + [globalURL].compactMap { $0 }
        return envelope(type: "session.finished", urls: urls, session: snapshot.session, now: now) { json in
            json.beginObject()
            json.field("session", snapshot.session)
            json.key("counts")
            CountsJSON.write(snapshot.counts, into: &json)
            json.endObject()
        }
    }

    func envelope(type: String, urls: [String], session: String, now: Int64, data: (inout JSONWriter) -> Void) -> WebhookEvent {
        var json = JSONWriter()
        json.beginObject()
        json.field("type", type)
        json.field("timestamp", date: now)
        json.key("data")
        data(&json)
        json.endObject()
        return WebhookEvent(id: newEventID(now: now), type: type, payload: json.bytes, urls: urls, session: session)
    }
}

enum CountsJSON {
    static func write(_ counts: [DownloadState: Int], into json: inout JSONWriter) {
        json.beginObject()
        for state in DownloadState.allCases {
            json.key(text: state.rawValue)
            json.value(counts[state, default: 0])
        }
        json.endObject()
    }
}
