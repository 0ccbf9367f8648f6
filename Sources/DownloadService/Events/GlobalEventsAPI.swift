import DownloadCore
import Foundation
import HTTPServer
import Persistence

/// `GET /events`: one Server-Sent Events stream for all jobs (or one session's). `state` events
/// come from the store's event log, in commit order, with the log's global sequence as `id:` —
/// so any node serving the stream sends the same events, and `Last-Event-ID` replays what a
/// client missed. An id the log cannot continue from (pruned, unknown, malformed) starts the
/// stream with `event: reset`: the client re-lists, then follows. `progress` events (no id: they
/// are not replayed) come at most once a second for each running job whose bytes moved: this
/// node's from its transfers, and with many nodes the others' from `elsewhere`.
struct GlobalEventsAPI: Sendable {
    let store: any JobStore
    let scheduler: Scheduler
    /// Progress of the jobs other nodes run; nil when this node is the only one.
    let elsewhere: RemoteProgress?

    /// How often the log is read for new events while following.
    static let pollInterval: Duration = .milliseconds(200)
    static let progressInterval: Duration = .seconds(1)
    static let keepAliveInterval: Duration = .seconds(15)
    /// Events read from the log at a time.
    static let pageSize = 500

    func stream(_ request: HTTPRequest) throws -> HTTPResponse {
        let session = request.query["session"]
        if let session, !SubmissionValidator.isValidSession(session) {
            throw APIProblem.invalid("session", "is not a valid session name")
        }
        let span = try store.eventLogSpan()
        var cursor = span.newest
        var reset = false
        if let raw = request.headers["Last-Event-ID"] {
            if let seen = Int64(raw.trimmingCharacters(in: .whitespaces)), seen >= 0, seen <= span.newest,
               seen >= (span.oldest ?? span.newest + 1) - 1 {
                cursor = seen
            } else {
                reset = true
            }
        }
        // Unbounded: dropping a state event would break the sequence; a client that stops reading
        // is cut off by the server's write timeout, which ends the follower.
        let (body, output) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .unbounded)
        output.yield(Array("retry: 2000\n\n".utf8))
        if reset { output.yield(Array("event: reset\nid: \(cursor)\ndata: {}\n\n".utf8)) }
        let follower = Task { [self, cursor] in
            await follow(session: session, from: cursor, into: output)
        }
        output.onTermination = { _ in follower.cancel() }
        var headers = HTTPHeaders()
        headers.set("Content-Type", "text/event-stream")
        headers.set("Cache-Control", "no-store")
        return HTTPResponse(status: 200, headers: headers, body: .stream(body))
    }

    private func follow(session: String?, from start: Int64, into output: AsyncStream<[UInt8]>.Continuation) async {
        elsewhere?.follow()
        defer { elsewhere?.unfollow() }
        let clock = ContinuousClock()
        var cursor = start
        var progress = ProgressFrames(session: session)
        var lastWrite = clock.now
        while !Task.isCancelled {
            var frames: [UInt8] = []
            var caughtUp = true
            var changed: Set<String> = []
            do {
                let events = try store.loggedEvents(after: cursor, session: session, limit: Self.pageSize)
                for event in events {
                    frames += Array("event: state\nid: \(event.sequence)\ndata: ".utf8) + event.payload + Array("\n\n".utf8)
                    cursor = event.sequence
                    changed.insert(event.downloadID)
                }
                caughtUp = events.count < Self.pageSize
            } catch {
                // The database is unavailable for now: keep the stream, read again next time.
            }
            // Looked at every poll, each job paced on its own: a count saved elsewhere is shown
            // as soon as it is read, not up to a second later. A job whose change this poll sent
            // waits for the next: one that just ended is counted as running until its end is
            // committed, and its progress must not follow that end.
            let running = scheduler.liveProgress().merging(elsewhere?.current ?? [:]) { here, _ in here }
            frames += progress.frames(running.filter { !changed.contains($0.key) }, now: clock.now)
            if frames.isEmpty, lastWrite.duration(to: clock.now) >= Self.keepAliveInterval { frames = Array(": keep-alive\n\n".utf8) }
            if !frames.isEmpty {
                output.yield(frames)
                lastWrite = clock.now
            }
            // Cancelled when the stream ends: the loop's condition then stops it.
            if caughtUp { try? await Task.sleep(for: Self.pollInterval) }
        }
    }
}

/// `event: progress` frames for the running jobs whose bytes moved since their last frame (at
/// most one a second each), with their rate over that time.
struct ProgressFrames {
    let session: String?
    private var throttle = ProgressThrottle(interval: GlobalEventsAPI.progressInterval)

    init(session: String?) {
        self.session = session
    }

    mutating func frames(_ running: [String: LiveProgress], now: ContinuousClock.Instant) -> [UInt8] {
        let shown = session.map { session in running.filter { $0.value.session == session } } ?? running
        var frames: [UInt8] = []
        for due in throttle.due(shown, now: now) {
            var rate: Int64 = 0
            if let previous = due.previous {
                let seconds = previous.at.duration(to: now).inSeconds
                if seconds > 0 { rate = Int64(Double(due.progress.bytesReceived - previous.bytes) / seconds) }
            }
            var json = JSONWriter(capacity: 128)
            json.beginObject()
            json.field("id", due.id)
            due.progress.write(into: &json)
            json.field("bytesPerSecond", rate)
            json.endObject()
            frames += Array("event: progress\ndata: ".utf8) + json.bytes + Array("\n\n".utf8)
        }
        return frames
    }
}
