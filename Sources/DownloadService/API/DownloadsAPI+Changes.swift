import DownloadCore
import HTTPServer
import Persistence

/// Steering a job after submit: `PATCH /downloads/{id}` and `POST /downloads/{id}/retry`.
extension DownloadsAPI {
    /// A JSON merge patch of the fields a client may change, as compare-and-set on the job's
    /// revision (re-read and re-applied if something else changed it meanwhile, unless `If-Match`
    /// pinned the revision: then `412`).
    func patch(_ id: String, _ request: HTTPRequest, kind: Direction = .download) async throws -> HTTPResponse {
        let patch: JobPatch
        switch JobPatch.parse(try Self.mergePatch(request)) {
        case .success(let value): patch = value
        case .failure(let failure): throw APIProblem.invalid(failure.errors)
        }
        if case .set(let webhookURL) = patch.webhookURL { try checkWebhookAddress(webhookURL) }
        if case .set(let url) = patch.url { try checkHostKeyTrust(url.text, field: "url") }
        let live = scheduler.liveBytes(of: id)
        return tagged(200, try await change(id, by: patch, ifMatch: request.headers["If-Match"], kind: kind), liveBytes: live)
    }

    /// Applies a validated patch to a live job, as `patch` describes; the job as stored after it.
    private func change(_ id: String, by patch: JobPatch, ifMatch: String?, kind: Direction = .download) async throws -> Download {
        for _ in 0..<10 {
            let current = try existing(id, kind: kind)
            if let ifMatch, !EntityTag.matches(ifMatch, current) {
                throw APIProblem(status: 412, title: "Precondition Failed",
                                 detail: "the job changed since the ETag in If-Match; read it again (its ETag is now \(EntityTag.of(current)))")
            }
            guard !current.state.isTerminal else {
                throw APIProblem.conflict("the job is \(current.state.rawValue) and can no longer be changed")
            }
            let updated: Download
            switch patch.applied(to: current, now: clock.now()) {
            case .success(let value): updated = value
            case .failure(let failure): throw APIProblem.invalid(failure.errors)
            }
            let store = store
            guard let stored = try await writes.perform({ try store.change(updated, expectingRevision: current.revision) }) else {
                continue  // changed meanwhile (progress, the scheduler, another client): read it again
            }
            scheduler.changed(stored, restart: patch.changesRequest && stored.state == .running)
            if stored.state == .queued { scheduler.jobStored(runAt: stored.runAt) }
            return stored
        }
        throw APIProblem.unavailable("the job kept changing; try again")
    }

    /// A request's JSON merge patch, parsed (`415` when it is not declared JSON, `400` when it is not JSON).
    static func mergePatch(_ request: HTTPRequest) throws -> JSONValue {
        let contentType = request.headers["Content-Type"]
        guard isJSON(contentType) || isMediaType(contentType, "application/merge-patch+json") else {
            throw APIProblem.unsupportedMediaType("send a JSON merge patch with Content-Type: application/merge-patch+json or application/json")
        }
        do {
            return try JSONParser.parse(request.body)
        } catch {
            throw APIProblem(status: 400, title: "Bad Request", detail: "the body is not valid JSON: \(error)")
        }
    }

    /// `ClientTransition.retry`.
    func retry(_ id: String, kind: Direction = .download) async throws -> HTTPResponse {
        try await transition(id, kind: kind, .retry)
    }
}
