/// One transfer's side of the engine's bandwidth budget: how many body bytes it may still take in
/// the current tick of the `BandwidthGovernor`, and whether it is held back for want of them.
/// Used on the engine queue only.
final class TransferThrottle {
    /// The transfer's own cap (`TransferRequest.maxSpeedBytesPerSecond`), bytes per second.
    let ownLimit: Int64?
    /// Bytes it may take now. curl hands over a whole read at once and a callback cannot take part
    /// of it, so a transfer held back saves allowance up to the size of the read it waits with.
    var allowance: Int64 = 0
    /// The size of the read the transfer was held back with (0 when it is not held).
    private(set) var waitingFor: Int64 = 0
    /// Whether budgets apply at all: false while neither the engine nor this transfer has a cap.
    var isMetered = false
    /// The write callback paused the transfer because `allowance` ran out.
    private(set) var isHolding = false
    /// Body bytes taken since the last tick, and whether it was held back in it: the governor's
    /// measure of what the transfer would use.
    var takenThisTick: Int64 = 0
    var heldThisTick = false

    init(ownLimit: Int64?) {
        self.ownLimit = ownLimit
    }

    /// From the write callback: whether `count` bytes may be taken now. False means pause; the
    /// governor calls the transfer's `resumeTransfer` once there is allowance again.
    func mayTake(_ count: Int) -> Bool {
        grant(upTo: count, minimum: count) == count
    }

    /// From the read callback of an upload, which may send less than curl asks for: how many of
    /// `count` bytes may go now, at least `minimum` of them (or `count`, if less); 0 means pause,
    /// and the governor calls the transfer's `resumeTransfer` once there is allowance again.
    func grant(upTo count: Int, minimum: Int) -> Int {
        guard isMetered else { return count }
        let least = Int64(min(count, minimum))
        guard allowance >= least else {
            isHolding = true
            heldThisTick = true
            waitingFor = least
            return 0
        }
        let granted = min(Int64(count), allowance)
        allowance -= granted
        takenThisTick += granted
        isHolding = false
        waitingFor = 0
        return Int(granted)
    }

    /// Adds this tick's share. A transfer that is not held back saves nothing beyond it (an idle
    /// transfer must not burst past the cap later); one that is held back saves up for the read it
    /// waits with, and what is left over after that read carries on.
    func refill(_ share: Int64) {
        allowance = min(allowance + share, waitingFor + share)
    }

    /// The governor gave allowance (or lifted the caps): whether the transfer was held back and
    /// may now be resumed.
    func release() -> Bool {
        guard isHolding, !isMetered || allowance >= waitingFor else { return false }
        isHolding = false
        return true
    }
}
