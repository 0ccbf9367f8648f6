import DownloadCore
import Synchronization

/// Live job events for `GET /downloads/{id}/events`: progress and state changes, fanned out to
/// every open stream of that job. Event ids are per job and increase strictly; they are taken
/// from the clock, so they keep increasing across restarts of fetchd too.
final class EventHub: Sendable {
    enum Event: Sendable {
        case progress(LiveProgress)
        case state(Download)
    }

    private struct Subscribers {
        var nextToken = 0
        var streams: [String: [Int: AsyncStream<(Int64, Event)>.Continuation]] = [:]
        var lastEventID: [String: Int64] = [:]
        /// The state last published per job, for `publishIfChanged`.
        var lastState: [String: DownloadState] = [:]
    }

    private let subscribers = Mutex(Subscribers())
    let clock: Clock

    init(clock: Clock) {
        self.clock = clock
    }

    /// A stream of this job's events from now on, with the id the next event will exceed.
    func subscribe(_ jobID: String) -> AsyncStream<(Int64, Event)> {
        let (stream, continuation) = AsyncStream<(Int64, Event)>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let token = subscribers.withLock { state in
            state.nextToken += 1
            state.streams[jobID, default: [:]][state.nextToken] = continuation
            return state.nextToken
        }
        continuation.onTermination = { [weak self] _ in
            self?.subscribers.withLock { state in
                state.streams[jobID]?[token] = nil
                if state.streams[jobID]?.isEmpty == true { state.streams[jobID] = nil }
            }
        }
        return stream
    }

    /// Those of `ids` that have an open stream (none asked when no job has one: a session action
    /// hands over 100,000 ids, and the lock is held while they are looked up).
    func subscribed(among ids: [String]) -> [String] {
        subscribers.withLock { state in state.streams.isEmpty ? [] : ids.filter { state.streams[$0] != nil } }
    }

    /// The id for an event of this job now.
    func nextEventID(_ jobID: String) -> Int64 {
        subscribers.withLock { state in
            let id = max(clock.now(), (state.lastEventID[jobID] ?? 0) + 1)
            state.lastEventID[jobID] = id
            return id
        }
    }

    func publish(_ jobID: String, _ event: Event) {
        var isTerminal = false
        if case .state(let download) = event { isTerminal = download.state.isTerminal }
        let (id, listeners) = subscribers.withLock { state -> (Int64, [AsyncStream<(Int64, Event)>.Continuation]) in
            let id = max(clock.now(), (state.lastEventID[jobID] ?? 0) + 1)
            let listeners = Array((state.streams[jobID] ?? [:]).values)
            // A terminal job gets no more events: drop its listeners and its counter.
            if isTerminal {
                state.streams[jobID] = nil
                state.lastEventID[jobID] = nil
                state.lastState[jobID] = nil
            } else {
                state.lastEventID[jobID] = id
                if case .state(let download) = event { state.lastState[jobID] = download.state }
            }
            return (id, listeners)
        }
        for listener in listeners {
            listener.yield((id, event))
            if isTerminal { listener.finish() }
        }
    }

    /// Whether any stream is open.
    var hasSubscribers: Bool {
        subscribers.withLock { !$0.streams.isEmpty }
    }

    /// Publishes the job's state unless it is the state last published for it (a change made on
    /// another node, seen in the event log, that this node may have published itself).
    func publishIfChanged(_ download: Download) {
        let known = subscribers.withLock { $0.lastState[download.id] }
        guard known != download.state else { return }
        publish(download.id, .state(download))
    }
}
