import Dispatch
import DownloadCore
import Logging
import Persistence

/// With many nodes (FETCHD_DATABASE_URL), a job may change on any of them: this tails the
/// store's event log and publishes, for the jobs with a `GET /downloads/{id}/events` stream open
/// on this node, the state they have now, so the stream follows a job wherever it runs. Only
/// states travel; progress events come from the node that runs the job. While no stream is open
/// it only keeps its place in the log.
final class ClusterEventRelay: @unchecked Sendable {  // `cursor` and `timer` are touched only on `queue`
    private let queue = DispatchQueue(label: "fetchd.event-relay")
    private let store: any JobStore
    private let hub: EventHub
    private let clock: Clock
    private let logger: Logger
    private lazy var timer = DueTimer(queue: queue, leeway: .milliseconds(20)) { [unowned self] in self.relay() }
    private var cursor: Int64?

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
        defer { timer.arm(at: clock.now() + Self.interval, now: clock.now()) }
        do {
            guard let from = cursor, hub.hasSubscribers else {
                cursor = try store.eventLogSpan().newest
                return
            }
            let events = try store.loggedEvents(after: from, session: nil, limit: Self.pageSize)
            cursor = events.last?.sequence ?? from
            for id in hub.subscribed(among: Array(Set(events.map(\.downloadID)))) {
                if let download = try store.download(id: id) { hub.publishIfChanged(download) }
            }
        } catch {
            logger.error("reading the event log failed", metadata: ["error": "\(error)"])
        }
    }
}
