import DownloadCore
import HTTPServer
import Persistence

/// `GET /downloads/{id}/events` (an upload's at `/uploads/{id}/events`): Server-Sent Events. The stream opens with the job's current
/// state, then carries `progress` and `state` events, and ends right after the terminal state
/// event (at once for a finished job). A `Last-Event-ID` at or past a finished job's last event
/// ends the stream without repeating it. Comments keep idle connections alive.
struct EventsAPI: Sendable {
    let store: any JobStore
    let hub: EventHub
    let present: @Sendable (Download) -> [UInt8]
    /// The bytes a job's running attempt reported (`Scheduler.liveBytes(of:)`).
    let liveBytes: @Sendable (String) -> Int64?

    static let keepAliveInterval: Duration = .seconds(15)

    func stream(_ id: String, lastEventID: String?, kind: Direction = .download) throws -> HTTPResponse {
        let live = liveBytes(id)  // before the rows: see `Download.bytesShown(liveBytes:)`
        guard let first = try store.download(id: id), first.direction == kind else { throw APIProblem.notFound() }
        let (body, output) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .bufferingNewest(512))
        output.yield(Array("retry: 2000\n\n".utf8))
        if first.state.isTerminal {
            // A finished job's last event has its finish time as id.
            let finalID = first.finishedAt ?? 0
            let seen = lastEventID.flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) } ?? Int64.min
            if seen < finalID { output.yield(frame(id: finalID, .state(first))) }
            output.finish()
            return Self.response(body)
        }
        // Subscribe, then read the snapshot again, so no change falls between the two.
        let events = hub.subscribe(id)
        // If this second read fails, the first is shown: it too is a real state of the job, read
        // a moment ago, and every change since comes through the subscription.
        let snapshot: Download
        do {
            snapshot = try store.download(id: id) ?? first
        } catch {
            snapshot = first
        }
        output.yield(frame(id: hub.nextEventID(id), .state(snapshot.showing(liveBytes: live))))
        let forward = Task {
            if !snapshot.state.isTerminal {
                for await (eventID, event) in events {
                    output.yield(frame(id: eventID, event))
                    if case .state(let download) = event, download.state.isTerminal { break }
                }
            }
            output.finish()
        }
        let keepAlive = Task {
            while !Task.isCancelled {
                // Cancelled when the stream ends: the loop then stops without another comment.
                try? await Task.sleep(for: Self.keepAliveInterval)
                output.yield(Array(": keep-alive\n\n".utf8))
            }
        }
        output.onTermination = { _ in
            forward.cancel()
            keepAlive.cancel()
        }
        return Self.response(body)
    }

    private static func response(_ body: AsyncStream<[UInt8]>) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.set("Content-Type", "text/event-stream")
        headers.set("Cache-Control", "no-store")
        return HTTPResponse(status: 200, headers: headers, body: .stream(body))
    }

    private func frame(id: Int64, _ event: EventHub.Event) -> [UInt8] {
        var text: [UInt8]
        switch event {
        case .progress(let progress):
            var json = JSONWriter(capacity: 64)
            json.beginObject()
            progress.write(into: &json)
            json.endObject()
            text = Array("event: progress\nid: \(id)\ndata: ".utf8) + json.bytes
        case .state(let download):
            text = Array("event: state\nid: \(id)\ndata: ".utf8) + present(download)
        }
        text.append(contentsOf: "\n\n".utf8)
        return text
    }
}
