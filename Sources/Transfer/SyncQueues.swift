import Dispatch
import Synchronization

/// Where finished files are fsynced. An fsync waits for the disk several times (the data, the
/// inode, the cache flush). The file writers' queues share threads that number about as many as
/// the CPUs, so fsyncs there held those threads throughout and files finishing together were
/// synced one or two at a time: 2,000 small files with every fsync 2 ms slower took 2.2–2.7 s to
/// the last webhook, and 1.35–2.0 s with their fsyncs overlapping here.
///
/// One fsync at a time runs where it was asked for (a writer's thread): with a fast disk that is
/// the usual case, and a hop to another thread would cost more than it saves. The others go to
/// serial queues without a target, whose threads may block; there are `count` of them, taken in
/// turn, so that a burst of finishing transfers does not start a thread (and a malloc arena) for each.
enum SyncQueues {
    static let count = 8
    private static let queues = (0..<count).map { DispatchQueue(label: "fetchd.transfer.fsync-\($0)") }
    private static let turn = Atomic<UInt>(0)
    /// Whether an fsync is running on the thread that asked for it.
    private static let inlineBusy = Atomic<Bool>(false)

    /// Runs `sync` (which fsyncs) here if no other one runs inline, else on the next queue.
    static func run(_ sync: @escaping @Sendable () -> Void) {
        guard inlineBusy.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            return queues[Int(turn.wrappingAdd(1, ordering: .relaxed).oldValue % UInt(count))].async(execute: sync)
        }
        sync()
        inlineBusy.store(false, ordering: .releasing)
    }
}
