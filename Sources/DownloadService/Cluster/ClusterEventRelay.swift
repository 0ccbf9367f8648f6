import Confinement
import Dispatch
import DownloadCore
import Logging
import Persistence

/// With many nodes (FETCHD_DATABASE_URL), a job may change and run on any of them. This tails the
/// store's event log and publishes, for the jobs with a `GET /downloads/{id}/events` stream open
/// on this node, the state they have now, so the stream follows a job wherever it runs. Progress
/// of the jobs other nodes run comes from the counts they save about once a second: it goes to
/// those jobs' streams here and, through `elsewhere`, to `GET /events` here. While no stream of
/// either kind is open it only keeps its place in the log.
final class ClusterEventRelay: QueueConfined, @unchecked Sendable {  // `cursor`, `throttle` and `timer` only on `queue` (assertOnQueue)
    let queue = DispatchQueue(label: "fetchd.event-relay")
    private let store: any JobStore
    private let hub: EventHub
    private let clock: Clock
    private let logger: Logger
    private lazy var timer = DueTimer(queue: queue, leeway: .milliseconds(20)) { [unowned self] in self.relay() }
    private var cursor: Int64?
    /// Paces the progress events of the per-job streams as the running node paces its own.
    private var throttle = ProgressThrottle(interval: GlobalEventsAPI.progressInterval)
    let elsewhere = RemoteProgress()

    /// Also how often saved progress is read while a stream is open: a count saved a second after
    /// the last then reaches a stream within 1.5 s, inside the promised 2 s.
    static let interval: Int64 = 200
    static let pageSize = 500

    init(store: any JobStore, hub: EventHub, clock: Clock, logger: Logger) {
        self.store = store
        self.hub = hub
        self.clock = clock
        self.logger = logger
    }

    func start() {
        queue.async { self.relay() }
    }

    func stop() {
        queue.sync { timer.cancel() }
    }

    private func relay() {
        assertOnQueue()
        defer { timer.arm(at: clock.now() + Self.interval, now: clock.now()) }
        do {
            // States first: a job seen claimed or finished in this read has its state published
            // before any progress of the read that follows.
            try relayStates()
            try relayProgress()
        } catch {
            logger.error("reading other nodes' changes failed", metadata: ["error": "\(error)"])
        }
    }

    private func relayStates() throws {
        guard let from = cursor, hub.hasSubscribers else {
            cursor = try store.eventLogSpan().newest
            return
        }
        let events = try store.loggedEvents(after: from, session: nil, limit: Self.pageSize)
        cursor = events.last?.sequence ?? from
        for id in hub.subscribed(among: Array(Set(events.map(\.downloadID)))) {
            if let download = try store.download(id: id) { hub.publishIfChanged(download) }
        }
    }

    private func relayProgress() throws {
        guard hub.hasSubscribers || elsewhere.isFollowed else { return }
        var running: [String: LiveProgress] = [:]
        for job in try store.runningElsewhere() {
            running[job.id] = LiveProgress(session: job.session, bytesReceived: job.bytesReceived,
                                           bytesExpected: job.bytesExpected, direction: job.direction)
        }
        elsewhere.replace(with: running)
        let watched = Set(hub.subscribed(among: Array(running.keys)))
        for due in throttle.due(running.filter { watched.contains($0.key) }, now: .now) {
            hub.publish(due.id, .progress(due.progress))
        }
    }
}
