import Confinement
import Dispatch
import DownloadCore
import Logging
import Persistence

/// Gives a new check to each active watch left without a live one. A check's own settlement
/// always makes the next, in its transaction; this finds the watches whose check ended another
/// way — cancelled through `/downloads` or a session action — at start and then every
/// `interval`. With many nodes any may find one: the watch's row lock and its check's state,
/// read under it, let only the first give it a check.
final class WatchKeeper: QueueConfined, @unchecked Sendable {  // `timer` only on `queue` (assertOnQueue)
    let queue = DispatchQueue(label: "fetchd.watches", target: Upkeep.queue)
    let store: any JobStore
    let checks: WatchChecks
    let clock: Clock
    let logger: Logger
    /// Told when a check was stored, so the scheduler's timer covers it.
    let checkStored: @Sendable (Int64) -> Void
    private lazy var timer = DueTimer(queue: queue, leeway: .seconds(1)) { [unowned self] in self.run() }

    static let interval: Int64 = 30_000
    static let batch = 500

    init(store: any JobStore, checks: WatchChecks, clock: Clock, logger: Logger, checkStored: @escaping @Sendable (Int64) -> Void) {
        self.store = store
        self.checks = checks
        self.clock = clock
        self.logger = logger
        self.checkStored = checkStored
    }

    func start() {
        queue.async { self.run() }
    }

    func stop() {
        queue.sync { timer.cancel() }
    }

    private func run() {
        assertOnQueue()
        let now = clock.now()
        do {
            let ids = try store.watchesWithoutLiveCheck(limit: Self.batch)
            if !ids.isEmpty {
                let renewed = try store.apply(ids.map { checks.renewal(of: $0, now: now) }).filter { $0 }.count
                logger.info("watches given a new check", metadata: ["watches": "\(renewed)"])
                checkStored(now)
            }
            timer.arm(at: now + (ids.count == Self.batch ? 0 : Self.interval), now: now)
        } catch {
            logger.error("cannot look for watches without a check", metadata: ["error": "\(error)"])
            timer.arm(at: now + Self.interval, now: now)
        }
    }
}
