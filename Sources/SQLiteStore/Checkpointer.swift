import Confinement
import Dispatch
import Synchronization

/// Copies the write-ahead log back into the database on its own connection and thread, instead of
/// in the commit that passes SQLite's 1,000 pages: a session action or a batch then does not wait
/// for the copy (a tenth of a 100,000-job pause), and the next write goes on beside it (a PASSIVE
/// checkpoint takes no write lock).
///
/// A PASSIVE checkpoint copies the frames committed before it started. Under a steady stream of
/// writes (batches) there are always newer ones, so the log was never emptied and SQLite never
/// started it over: it grew by ~60 MB a second of batch intake, without bound, every frame on a
/// new page the kernel had to allocate and zero. So once the log holds `restartPages`, the
/// checkpoint here is followed by a RESTART one with the writer held off: it copies what was
/// committed meanwhile (a few milliseconds' worth) and has the next write start the log over, on
/// pages that are then written over in place.
///
/// How far the log grows past `restartPages` depends on how long a checkpoint takes beside the
/// writes: on a disk slower than the intake (or one busy with other work) it took long enough for
/// the log to reach three times that and more. So from `ceilingPages` on, a write waits for the
/// checkpoint under way before it starts (`waitForRoom`): the intake then slows down to what the
/// disk keeps up with, and the log stays within `ceilingPages` and the writes already under way.
///
/// A checkpoint that fails, or restarts that keep finding readers on the log while it grows, go
/// to `report`: the store has no logger, and unseen, either would let the log fill the disk.
final class Checkpointer: QueueConfined, @unchecked Sendable {  // `connection`, `holdingWriter`, `nextGrowthReport` only on `queue` (assertOnQueue)
    /// The WAL's size, in pages, from which a commit asks for a checkpoint (SQLite's own default).
    static let pages: Int32 = 1000
    /// The WAL's size, in pages, from which a checkpoint restarts it (32 MiB of 8 KiB pages).
    static let restartPages = 4096
    /// How long a restart waits for readers still on the log's frames (the writer waits as long)
    /// before it leaves the restart to the next checkpoint, in ms.
    private static let restartWait: Int32 = 10
    /// The log's size, in pages, from which restarts that find readers are reported: one or two
    /// busy restarts under heavy intake are normal (the log then holds up to about three times
    /// `restartPages`), this many mean a reader keeps the log from starting over.
    static let growthReported = 4 * restartPages
    /// The log's size, in pages, from which a write waits for the checkpoint under way: twice
    /// `restartPages`, which checkpoints that keep up with the writes do not reach.
    static let ceilingPages: Int32 = 2 * Int32(restartPages)
    private let connection: SQLiteConnection
    let queue = DispatchQueue(label: "fetchd.sqlite-checkpoint")
    private let running = Atomic<Bool>(false)
    /// The log's size, in frames, when the last checkpoint was asked for.
    private let askedAt = Atomic<Int32>(0)
    /// The log's size, in frames, after the last commit; 0 once a restart went through.
    private let logPages = Atomic<Int32>(0)
    /// The last restart found readers on the log: waiting for the next would not make room.
    private let readersHoldLog = Atomic<Bool>(false)
    /// Set on `queue`, where a write must not wait for the checkpoint (`report` runs there).
    private let onQueue = DispatchSpecificKey<Bool>()
    /// Runs its argument while the store's writer waits.
    private var holdingWriter: ((() -> Void) -> Void)?
    private let report: @Sendable (CheckpointProblem) -> Void
    /// The log's size, in pages, from which growth is reported next: `growthReported`, doubled at
    /// each report so that a log that keeps growing is reported once per doubling, not once per
    /// checkpoint; back to `growthReported` once a restart goes through.
    private var nextGrowthReport = Checkpointer.growthReported

    /// `report` runs on the checkpointer's queue.
    init(path: String, report: @escaping @Sendable (CheckpointProblem) -> Void) throws {
        connection = try SQLiteConnection(path: path)
        self.report = report
        queue.setSpecific(key: onQueue, value: true)
    }

    /// Takes over the checkpoints of `writer`'s commits.
    func follow(_ writer: SQLiteConnection) {
        writer.onCommit { [weak self] pages in self?.committed(walPages: pages) }
    }

    /// Lets checkpoints restart the log: `holdingWriter` runs a body while no transaction of the
    /// writer runs or starts (it takes the lock the store writes under).
    func restartsHolding(_ holdingWriter: @escaping (() -> Void) -> Void) {
        queue.sync { self.holdingWriter = holdingWriter }
    }

    /// A checkpoint is asked for once every `pages` frames the log grows by (or when a log started
    /// over reaches `pages`). Asking after every commit once the log held `pages`, as SQLite does,
    /// copied the few pages each commit wrote (the tables' and indexes' tail pages again and
    /// again) and synced the log and the database twice for every commit.
    private func committed(walPages: Int32) {
        logPages.store(walPages, ordering: .relaxed)
        let last = askedAt.load(ordering: .relaxed)
        guard walPages >= Self.pages, walPages < last || walPages - last >= Self.pages,
              !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        askedAt.store(walPages, ordering: .relaxed)
        queue.async { self.checkpoint() }
    }

    /// Before a write takes the writer's lock (never with it held: a restart takes it): while the
    /// log holds `ceilingPages` or more, waits for the checkpoint under way, or one asked for now,
    /// which copies the log back and starts it over. Not while readers keep the log from starting
    /// over, which waiting would not change (that is reported).
    func waitForRoom() {
        guard logPages.load(ordering: .relaxed) >= Self.ceilingPages, !readersHoldLog.load(ordering: .relaxed),
              DispatchQueue.getSpecific(key: onQueue) == nil else { return }
        if !running.exchange(true, ordering: .acquiringAndReleasing) {
            queue.async { self.checkpoint() }
        }
        queue.sync {}
    }

    private func checkpoint() {
        assertOnQueue()
        defer { running.store(false, ordering: .releasing) }
        // A checkpoint that cannot copy every frame now (a reader holds old ones) leaves them to a
        // later one. Whether the log starts over is decided on its size now: it may have passed
        // `restartPages` while this checkpoint copied what was there when it started.
        guard let passive = run("PASSIVE"),
              max(passive.logPages, Int(logPages.load(ordering: .relaxed))) >= Self.restartPages,
              let holdingWriter else { return }
        var restart: (busy: Bool, logPages: Int)?
        holdingWriter {
            restart = connection.withBusyTimeout(Self.restartWait) { run("RESTART") }
            // No commit comes in while the writer is held: the next one starts the log over.
            if restart?.busy == false { logPages.store(0, ordering: .relaxed) }
        }
        guard let restart else { return }
        readersHoldLog.store(restart.busy, ordering: .relaxed)
        guard restart.busy else {
            nextGrowthReport = Self.growthReported
            return
        }
        guard restart.logPages >= nextGrowthReport else { return }
        report(.logGrowing(pages: restart.logPages))
        while nextGrowthReport <= restart.logPages { nextGrowthReport *= 2 }
    }

    /// `PRAGMA wal_checkpoint(mode)`: whether readers or the writer kept it from finishing, and the
    /// log's size in pages; nil, reported, when it failed.
    private func run(_ mode: String) -> (busy: Bool, logPages: Int)? {
        do {
            return try connection.prepare("PRAGMA wal_checkpoint(\(mode))").query { row in (busy: row.int(0) != 0, logPages: row.int(1)) }.first
        } catch {
            report(.failed(mode: mode, error: error))
            return nil
        }
    }

    func close() {
        queue.sync { connection.close() }
    }
}

/// What kept the write-ahead log from being copied back or started over, for the service to log.
public enum CheckpointProblem: Sendable {
    /// A checkpoint (`mode`: PASSIVE or RESTART) failed; the commits that follow ask for another.
    case failed(mode: String, error: any Error)
    /// Restarts keep finding readers on the log, which so grows without bound: it holds `pages`
    /// pages. Reported from `Checkpointer.growthReported` pages on, once each time it doubles.
    case logGrowing(pages: Int)
}
