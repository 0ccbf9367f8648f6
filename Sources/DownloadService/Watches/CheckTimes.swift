import Synchronization

/// Tells the scheduler when a check the store made inside another write is due (a settlement
/// commits without a scheduling pass, which would otherwise have read it): bound once the
/// scheduler exists, since the settlement that reports to it is built first.
final class CheckTimes: Sendable {
    /// The closure inside a struct: a bare function type in the lock's generic storage is
    /// converted to and from its generic form on each access, and the write-back of an `inout`
    /// access wraps it in two more thunks every time (10,000 checks a minute made each call
    /// walk a chain that grew by 20,000 thunks a minute).
    private struct Tell: Sendable {
        let call: @Sendable (Int64) -> Void
    }

    private let scheduled = Mutex<Tell?>(nil)

    func bind(_ tell: @escaping @Sendable (Int64) -> Void) {
        scheduled.withLock { $0 = Tell(call: tell) }
    }

    /// A check is due at `time`. Quick, and never calls the store: it may run inside its transaction.
    func due(at time: Int64) {
        scheduled.withLock { $0 }?.call(time)
    }
}
