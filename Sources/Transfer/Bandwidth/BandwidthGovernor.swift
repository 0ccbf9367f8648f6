import Dispatch

/// The engine's bandwidth budget: a token bucket per transfer, refilled every tick (100 ms) from
/// one engine-wide budget, divided so that every transfer gets an even share, capped by its own
/// limit, and what one leaves unused goes to the others. A transfer whose allowance runs out is
/// paused from its write callback (`CURL_WRITEFUNC_PAUSE`) and resumed (`curl_easy_pause`) at the
/// tick that refills it. The timer runs only while some transfer is metered.
///
/// Why not libcurl's own CURLOPT_MAX_RECV_SPEED_LARGE, re-set on each transfer as the shares change:
/// Benchmarks/README.md ("bandwidth_accuracy.py") has the measurements: this holds a cap within
/// about 3 % over 10 s windows, re-setting the option within about 10 %.
/// Used on the engine queue only.
final class BandwidthGovernor {
    static let tickMilliseconds = 100

    private let timer: DispatchSourceTimer
    private let resume: (TransferID) -> Void
    private var members: [TransferID: TransferThrottle] = [:]
    private var limit: Int64?
    private var isTicking = false
    private var lastTick = DispatchTime.now().uptimeNanoseconds

    /// `resume` is called (on `queue`) for each paused transfer that has allowance again.
    init(queue: DispatchQueue, resume: @escaping (TransferID) -> Void) {
        self.resume = resume
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler { [weak self] in self?.refill() }
        timer.schedule(deadline: .distantFuture)
        timer.resume()
    }

    /// The engine-wide cap in bytes per second, nil for none; the next tick applies it.
    func setLimit(_ bytesPerSecond: Int64?) {
        limit = bytesPerSecond.map { max(1, $0) }
        setTicking(true)
    }

    /// A new transfer takes part from the next tick on.
    func add(_ id: TransferID, _ throttle: TransferThrottle) {
        members[id] = throttle
        guard limit != nil || throttle.ownLimit != nil else { return }
        throttle.isMetered = true
        setTicking(true)
    }

    /// libcurl's receive buffer for a new transfer under `limit`: curl hands a whole read to the
    /// write callback, and reads as much as the buffer holds, so under a cap the buffer must be
    /// small enough that one read is a short burst (about 1/20 s of the cap) — and no smaller than
    /// 16 KiB (curl's default) so that a cap lifted later still leaves a fast transfer.
    /// Nil when no engine cap applies (the transfer keeps its own size).
    func receiveBufferSize() -> Int? {
        guard let limit else { return nil }
        return Int(min(256 * 1024, max(16 * 1024, limit / 20)))
    }

    /// The transfer ended: the next tick gives its share to the others.
    func remove(_ id: TransferID) {
        members.removeValue(forKey: id)
    }

    func stop() {
        timer.cancel()
        members = [:]
    }

    /// Divides the budget of the time since the last refill and resumes the transfers that were
    /// held back and have allowance again.
    private func refill() {
        let now = DispatchTime.now().uptimeNanoseconds
        // A late timer (a busy queue) must not hand out a burst: at most two ticks' worth.
        let seconds = min(Double(now - lastTick) / 1e9, 2 * Double(Self.tickMilliseconds) / 1000)
        lastTick = now

        let ids = Array(members.keys)
        let throttles = ids.compactMap { members[$0] }
        let ceilings = throttles.map { throttle in throttle.ownLimit.map { Self.bytes($0, in: seconds) } }
        let shares: [Int64?]
        if let limit {
            let wants = zip(throttles, ceilings).map { throttle, ceiling in
                Self.want(of: throttle, ceiling: ceiling ?? Int64.max)
            }
            shares = BandwidthShares.divide(Self.bytes(limit, in: seconds), wants: wants, ceilings: ceilings.map { $0 ?? Int64.max })
                .map { Optional($0) }
        } else {
            shares = ceilings
        }
        var anyMetered = false
        for (index, throttle) in throttles.enumerated() {
            throttle.takenThisTick = 0
            throttle.heldThisTick = false
            if let share = shares[index] {
                throttle.isMetered = true
                anyMetered = true
                throttle.refill(share)
            } else {
                throttle.isMetered = false
                throttle.allowance = 0
            }
            if throttle.release() { resume(ids[index]) }
        }
        setTicking(anyMetered)
    }

    /// What a transfer would take in the next tick: everything it may if it was held back in the
    /// last one, else about what it took then (with room to grow).
    private static func want(of throttle: TransferThrottle, ceiling: Int64) -> Int64 {
        if throttle.heldThisTick || throttle.isHolding { return ceiling }
        return min(ceiling, throttle.takenThisTick * 2 + 16 * 1024)
    }

    private static func bytes(_ perSecond: Int64, in seconds: Double) -> Int64 {
        max(1, Int64((Double(perSecond) * seconds).rounded()))
    }

    private func setTicking(_ on: Bool) {
        guard on != isTicking else { return }
        isTicking = on
        if on {
            lastTick = DispatchTime.now().uptimeNanoseconds
            let interval = DispatchTimeInterval.milliseconds(Self.tickMilliseconds)
            timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(5))
        } else {
            timer.schedule(deadline: .distantFuture)
        }
    }
}

/// How a budget is divided among transfers: max-min fair ("water-filling"). Pure.
enum BandwidthShares {
    /// Each transfer gets up to what it wants, the budget split evenly among those that want more
    /// than an even split; what is still left then goes evenly to all, up to each one's ceiling.
    static func divide(_ budget: Int64, wants: [Int64], ceilings: [Int64]) -> [Int64] {
        var shares = [Int64](repeating: 0, count: wants.count)
        var left = budget
        var remaining = wants.count
        for index in wants.indices.sorted(by: { wants[$0] < wants[$1] }) {
            let share = min(wants[index], left / Int64(remaining))
            shares[index] = share
            left -= share
            remaining -= 1
        }
        // Budget that nobody seemed to want: spread it, so that a transfer speeding up is not held
        // to its old rate for a tick.
        let open = shares.indices.filter { shares[$0] < ceilings[$0] }
        if left > 0, !open.isEmpty {
            let extra = left / Int64(open.count)
            for index in open { shares[index] = min(ceilings[index], shares[index] + extra) }
        }
        return shares
    }
}
