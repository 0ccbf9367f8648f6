import DownloadCore
import HTTPServer
import Persistence

/// `POST /sessions/{session}/{pause,resume,cancel,retry}`: one action on a whole session, in one
/// set-based transaction run off the event loops, then the transfers of changed running jobs
/// stopped, streams told, and the scheduler and webhook delivery woken.
struct SessionsAPI: Sendable {
    let store: any JobStore
    let scheduler: Scheduler
    let dispatcher: WebhookDispatcher
    let hub: EventHub
    let events: WebhookEvents
    let partials: PartialFiles
    let clock: Clock
    let writes: WriteQueue

    func act(_ kind: SessionActionKind, session: String, _ request: HTTPRequest) async throws -> HTTPResponse {
        var errors: [FieldError] = []
        if !SubmissionValidator.isValidSession(session) {
            errors.append(FieldError(field: "session", message: "is not a valid session name"))
        }
        var state: DownloadState?
        if let text = request.query["state"] {
            state = DownloadState(rawValue: text)
            if state == nil {
                errors.append(FieldError(field: "state", message: "must be one of \(DownloadState.allCases.map(\.rawValue).joined(separator: ", "))"))
            }
        }
        guard errors.isEmpty else { throw APIProblem.invalid(errors) }
        let now = clock.now()
        let (store, events, narrowed) = (store, events, state)
        let result = try await writes.perform {
            try store.act(SessionAction(
                kind: kind, session: session, state: narrowed, now: now,
                // A job nobody subscribes to gets no event: 100,000 cancellations build no payloads.
                events: { job in events.ended(job, now: now) },
                sessionFinished: { [events.sessionFinished($0, now: now)] }))
        }
        try afterCommit(kind, result)
        var json = JSONWriter()
        json.beginObject()
        json.field("session", session)
        json.field("matched", result.matched)
        json.field("changed", result.changed.count)
        json.endObject()
        return .json(200, json.bytes)
    }

    private func afterCommit(_ kind: SessionActionKind, _ result: SessionActionResult) throws {
        guard !result.changed.isEmpty else { return }
        switch kind {
        case .pause:
            for id in result.wereRunning { scheduler.stop(id, reason: .pause) }
        case .cancel:
            for id in result.wereRunning { scheduler.stop(id, reason: .cancel) }
            let running = Set(result.wereRunning)
            for id in Set(partials.ids()).intersection(result.changed) where !running.contains(id) { partials.remove(id) }
            dispatcher.poke()
        case .resume, .retry:
            scheduler.poke()
        }
        for id in hub.subscribed(among: result.changed) {
            let live = scheduler.liveBytes(of: id)  // before the row: see `Download.bytesShown(liveBytes:)`
            if let job = try store.download(id: id) { hub.publish(id, .state(job.showing(liveBytes: live))) }
        }
    }
}
