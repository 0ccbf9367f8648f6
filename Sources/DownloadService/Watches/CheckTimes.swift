import Synchronization

/// Tells the scheduler when a check the store made inside another write is due (a settlement
/// commits without a scheduling pass, which would otherwise have read it): bound once the
/// scheduler exists, since the settlement that reports to it is built first.
final class CheckTimes: Sendable {
    private let scheduled = Mutex<(@Sendable (Int64) -> Void)?>(nil)

    func bind(_ tell: @escaping @Sendable (Int64) -> Void) {
        scheduled.withLock { $0 = tell }
    }

    /// A check is due at `time`. Quick, and never calls the store: it may run inside its transaction.
    func due(at time: Int64) {
        scheduled.withLock { $0 }?(time)
    }
}
