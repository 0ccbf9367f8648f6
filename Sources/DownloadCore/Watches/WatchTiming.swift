/// When a watch checks: every `interval`, or at the minutes of a cron `schedule`. Each watch's
/// checks are offset by a fraction of the period that is its own (`spread`, from its id), so that
/// many watches of one host do not ask at once; missed times are skipped, so a check due while
/// fetchd was down runs once, not once per missed time.
public enum WatchTiming: Sendable, Equatable {
    case interval(milliseconds: Int64)
    case schedule(CronExpression)

    /// Checks are spread over this share of the period.
    public static let spreadShare = 0.1
    /// A schedule's spread is at most this long, however far apart its times are.
    public static let maxScheduleSpread: Int64 = 3_600_000

    /// The first check time strictly after `now`: an interval's times count from `anchor` (the
    /// watch's creation); `spread` in 0..<1 is the watch's own share of the spread. Nil when a
    /// schedule names no time within years.
    public func nextCheck(after now: Int64, anchor: Int64, spread: Double) -> Int64? {
        switch self {
        case .interval(let period):
            let offset = Int64(Double(period) * Self.spreadShare * spread)
            // The smallest k ≥ 1 with anchor + k·period + offset > now (the check at the anchor
            // itself, k = 0, is the one at creation).
            let elapsed = now - anchor - offset
            let k = max(1, (elapsed >= 0 ? elapsed / period : -((-elapsed + period - 1) / period)) + 1)
            return anchor + k * period + offset
        case .schedule(let cron):
            // A time whose offset carries it past `now` may be up to the largest spread before it.
            guard var nominal = cron.next(after: now - Self.maxScheduleSpread - 1) else { return nil }
            while true {
                guard let following = cron.next(after: nominal) else { return nil }
                let offset = Int64(Double(min(Self.maxScheduleSpread * 10, following - nominal)) * Self.spreadShare * spread)
                if nominal + offset > now { return nominal + offset }
                nominal = following
            }
        }
    }

    /// A watch's own share of the spread, in 0..<1, from its id (FNV-1a): the same on every node
    /// and after every restart.
    public static func spread(of id: String) -> Double {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in id.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return Double(hash % 1_000_000) / 1_000_000
    }
}
