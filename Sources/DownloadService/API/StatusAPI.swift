import DownloadCore
import HTTPServer
import Persistence

/// Sessions, health, readiness and metrics.
struct StatusAPI: Sendable {
    let store: any JobStore
    let scheduler: Scheduler
    let metrics: Metrics
    let clock: Clock

    func session(_ name: String) throws -> HTTPResponse {
        guard SubmissionValidator.isValidSession(name) else {
            throw APIProblem.invalid("session", "is not a valid session name")
        }
        let counts = try store.counts(session: name)
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
        guard store.isWritable() else { return APIProblem.unavailable("the database is not writable").response }
        return .json(200, Array(#"{"status":"ready"}"#.utf8))
    }

    /// Prometheus text exposition: gauges read from the database now, counters and histograms kept since start.
    func prometheus() throws -> HTTPResponse {
        let (counts, depth, backlog) = (try store.counts(), try store.queueDepth(), try store.webhookBacklog())
        let now = clock.now()
        let uploads = try store.uploadCounts()
        var text = Self.gauge("fetchd_downloads", "Jobs by state, downloads and uploads together.",
                              DownloadState.allCases.map { (Metrics.labels(["state": $0.rawValue]), counts[$0, default: 0]) })
        text += Self.gauge("fetchd_uploads", "Upload jobs by state.",
                           DownloadState.allCases.map { (Metrics.labels(["state": $0.rawValue]), uploads[$0, default: 0]) })
        text += Self.gauge("fetchd_queue_depth", "Queued jobs by why they wait; due jobs wait for a slot, their host, the discretionary rules or disk space.", [
            (Metrics.labels(["waiting_for": "earliestBeginDate"]), depth.earliestBeginDate),
            (Metrics.labels(["waiting_for": "retry"]), depth.retry),
            (Metrics.labels(["waiting_for": "due"]), depth.due),
        ])
        text += Self.gauge("fetchd_active_transfers", "Transfers running now.", [("", scheduler.runningTransfers)])
        text += Self.gauge("fetchd_webhook_backlog", "Webhook deliveries not yet settled.", [("", backlog.pending)])
        text += Self.gauge("fetchd_webhook_oldest_pending_age_seconds", "Age of the oldest event with an unsettled delivery.",
                           [("", backlog.oldestEventAt.map { Int(max(0, now - $0) / 1000) } ?? 0)])
        text += metrics.render(help: Self.help, bounds: [
            "fetchd_http_request_duration_seconds": Metrics.requestBuckets,
            "fetchd_transfer_duration_seconds": Metrics.transferBuckets,
        ])
        var headers = HTTPHeaders()
        headers.set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        return HTTPResponse(status: 200, headers: headers, body: .bytes(Array(text.utf8)))
    }

    static let help = [
        "fetchd_attempts_total": "Transfer attempts by how they ended.",
        "fetchd_downloaded_bytes_total": "Body bytes received from origins.",
        "fetchd_uploaded_bytes_total": "Bytes of uploads' sources sent.",
        "fetchd_transfer_duration_seconds": "Duration of transfer attempts.",
        "fetchd_webhook_deliveries_total": "Webhook delivery attempts by outcome (delivered, retry, failed).",
        "fetchd_http_requests_total": "API requests by route, method and status.",
        "fetchd_http_request_duration_seconds": "API request latency by route.",
    ]

    static func gauge(_ name: String, _ help: String, _ samples: [(String, Int)]) -> String {
        var text = "# HELP \(name) \(help)\n# TYPE \(name) gauge\n"
        for (labels, value) in samples { text += "\(name)\(labels.isEmpty ? "" : "{\(labels)}") \(value)\n" }
        return text
    }
}
