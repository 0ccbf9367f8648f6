import Confinement
import Dispatch
import DownloadCore
import Logging

/// Applies `FETCHD_MAX_BANDWIDTH` (or `FETCHD_MAX_UPLOAD_BANDWIDTH`) to the transfer engine: at
/// start, and again whenever the schedule's cap changes (one timer for the next change; nothing polls).
final class BandwidthPlan: QueueConfined, @unchecked Sendable {  // `timer` only on `queue` (assertOnQueue)
    let queue = DispatchQueue(label: "fetchd.bandwidth")
    private let schedule: BandwidthSchedule
    /// Names the cap in the log.
    private let name: String
    private let apply: @Sendable (Int64?) -> Void
    private let clock: Clock
    private let logger: Logger
    private lazy var timer = DueTimer(queue: queue, leeway: .milliseconds(50)) { [unowned self] in self.update() }

    /// `apply` sets the engine's cap in bytes per second (nil: none).
    init(schedule: BandwidthSchedule, name: String = "bandwidth cap", clock: Clock, logger: Logger,
         apply: @escaping @Sendable (Int64?) -> Void) {
        self.schedule = schedule
        self.name = name
        self.clock = clock
        self.logger = logger
        self.apply = apply
    }

    func start() {
        guard schedule != .unlimited else { return }
        queue.async { self.update() }
    }

    func stop() {
        queue.sync { timer.cancel() }
    }

    private func update() {
        assertOnQueue()
        let now = clock.now()
        let limit = schedule.limit(at: now)
        apply(limit)
        logger.info("\(name)", metadata: ["bytes.per.second": "\(limit.map(String.init) ?? "none")"])
        timer.arm(at: schedule.nextChange(after: now), now: now)
    }
}
