import DownloadCore
import HTTPServer
import Store

/// Sessions, health, readiness and metrics.
struct StatusAPI: Sendable {
    let store: Store
    let scheduler: Scheduler

    func session(_ name: String) -> HTTPResponse {
        guard SubmissionValidator.isValidSession(name) else {
            return DownloadsAPI.invalid([FieldError(field: "session", message: "is not a valid session name")])
        }
        guard let counts = try? store.counts(session: name) else { return DownloadsAPI.unavailable("the session could not be read") }
        let total = counts.values.reduce(0, +)
        let live = DownloadState.nonTerminal.reduce(0) { $0 + counts[$1, default: 0] }
        var json = JSONWriter()
        json.beginObject()
        json.field("session", name)
        json.key("counts")
        CountsJSON.write(counts, into: &json)
        json.field("finished", total > 0 && live == 0)
        json.endObject()
        return .json(200, json.bytes)
    }

    func health() -> HTTPResponse {
        .json(200, Array(#"{"status":"ok"}"#.utf8))
    }

    func readiness() -> HTTPResponse {
        guard store.isWritable() else { return DownloadsAPI.unavailable("the database is not writable") }
        return .json(200, Array(#"{"status":"ready"}"#.utf8))
    }

    /// Prometheus text exposition of the job counts and running transfers.
    func metrics() -> HTTPResponse {
        guard let counts = try? store.counts() else { return DownloadsAPI.unavailable("the counts could not be read") }
        var text = "# HELP fetchd_downloads Download jobs by state.\n# TYPE fetchd_downloads gauge\n"
        for state in DownloadState.allCases {
            text += "fetchd_downloads{state=\"\(state.rawValue)\"} \(counts[state, default: 0])\n"
        }
        text += "# HELP fetchd_active_transfers Transfers running now.\n# TYPE fetchd_active_transfers gauge\n"
        text += "fetchd_active_transfers \(scheduler.publishedLoad.withLock { $0.running })\n"
        var headers = HTTPHeaders()
        headers.set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        return HTTPResponse(status: 200, headers: headers, body: .bytes(Array(text.utf8)))
    }
}
