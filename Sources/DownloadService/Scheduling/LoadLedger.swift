import Confinement
import Dispatch
import DownloadCore
import Persistence
import Synchronization

/// What runs on this node, as the scheduling policy sees it: transfers by host and kind, the
/// disk space they still need, and the hosts held back. The dispatcher counts an attempt in when
/// it chooses it and the attempt runner counts it out when it ends (or its slot is freed early);
/// the API reads the last published copy from any thread.
final class LoadLedger: QueueConfined, @unchecked Sendable {  // `load` and `backoffsRestored` only on `queue` (assertOnQueue)
    let queue: DispatchQueue
    private let capacity: Capacity
    private(set) var load = Load()
    /// What runs now, published after every change for the API's `waitingFor`.
    private let published = Mutex(Load())
    /// Whether the hosts held across a restart have been read from the store.
    private var backoffsRestored = false

    init(queue: DispatchQueue, capacity: Capacity) {
        self.queue = queue
        self.capacity = capacity
    }

    /// The load as last published; from any thread.
    var snapshot: Load { published.withLock { $0 } }

    /// Adds an attempt to the load (`starting`) or takes it out.
    func track(_ attempt: ActiveAttempt, starting: Bool) {
        assertOnQueue()
        let step = starting ? 1 : -1
        load.running += step
        load.runningByHost[attempt.download.hostKey, default: 0] += step * attempt.connections
        if load.runningByHost[attempt.download.hostKey] == 0 { load.runningByHost[attempt.download.hostKey] = nil }
        if attempt.discretionary { load.runningDiscretionary += step }
        load.reservedDiskBytes += starting ? attempt.remainingBytes : -attempt.remainingBytes
        publish()
    }

    /// Connections a job may open now: what it asks for, within what its host has left (at least one).
    func connectionsFree(for job: Download) -> Int {
        assertOnQueue()
        let used = load.runningByHost[job.hostKey, default: 0]
        return max(1, min(job.connections, capacity.maxTransfersPerHost - used))
    }

    /// An attempt holds `count` of its host's connections instead of those it holds now.
    func setConnections(_ attempt: inout ActiveAttempt, _ count: Int) {
        assertOnQueue()
        load.runningByHost[attempt.download.hostKey, default: 0] += count - attempt.connections
        attempt.connections = count
        publish()
    }

    /// Every job of `host` waits until `until` (a 429 or 503 with Retry-After).
    func holdHost(_ host: String, until: Int64) {
        assertOnQueue()
        load.hostBackoffs[host] = max(until, load.hostBackoffs[host] ?? 0)
        publish()
    }

    /// A request to `host` starts now: the next may not start before `hostMinInterval` has passed.
    func spaceHost(_ host: String, now: Int64) {
        assertOnQueue()
        guard capacity.hostMinInterval > .zero else { return }
        load.hostSpacing[host] = now + capacity.hostMinInterval.wholeMilliseconds
        publish()
    }

    /// Drops holds and spacings that have passed; the first time, restores the holds a previous
    /// run left in the store.
    func forgetPastHolds(now: Int64, restoring stored: () throws -> [String: Int64]) throws {
        assertOnQueue()
        if !backoffsRestored {
            load.hostBackoffs.merge(try stored(), uniquingKeysWith: max)
            backoffsRestored = true
        }
        load.hostBackoffs = load.hostBackoffs.filter { $0.value > now }
        load.hostSpacing = load.hostSpacing.filter { $0.value > now }
        publish()
    }

    /// The hosts no job may start on now: held back or spaced.
    var heldHosts: Set<String> {
        assertOnQueue()
        return Set(load.hostBackoffs.keys).union(load.hostSpacing.keys)
    }

    /// When the earliest hold or spacing ends.
    var nextHoldEnd: Int64? {
        assertOnQueue()
        return (Array(load.hostBackoffs.values) + Array(load.hostSpacing.values)).min()
    }

    private func publish() {
        let copy = load
        published.withLock { $0 = copy }
    }
}
