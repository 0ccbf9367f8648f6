/// The engine-wide bandwidth cap as `FETCHD_MAX_BANDWIDTH` gives it: one rate (`20MiB`, per
/// second), `off`, or a UTC schedule of daily windows each with a rate or `off`
/// (`08:00-18:00=2MiB,18:00-08:00=off`). Outside every window there is no cap.
///
/// The service parses the setting once at start-up (a bad one is a start-up error naming the
/// setting), applies `limit(at:)` to the transfer engine
/// (`TransferEngine.setBandwidthLimit(bytesPerSecond:)`) at start, and again at `nextChange(after:)`
/// with a timer.
public struct BandwidthSchedule: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var window: DailyWindow
        /// Bytes per second; nil for `off` (no cap in this window).
        public var bytesPerSecond: Int64?
    }

    /// The smallest cap accepted: below it, libcurl's and the engine's granularity make no sense.
    public static let minimumRate: Int64 = 1024

    /// A cap that holds all day, when the setting is a single rate (or `off`).
    public private(set) var constant: Int64?
    /// The windows of a schedule, in the order given; they never overlap.
    public private(set) var entries: [Entry]

    /// No cap at all.
    public static let unlimited = BandwidthSchedule(constant: nil, entries: [])

    /// One rate all day.
    public init(bytesPerSecond: Int64?) {
        self.init(constant: bytesPerSecond, entries: [])
    }

    private init(constant: Int64?, entries: [Entry]) {
        self.constant = constant
        self.entries = entries
    }

    /// Parses the setting; the error says what is wrong, for a one-line start-up error.
    public static func parse(_ text: String) -> Result<BandwidthSchedule, ValidationProblem> {
        let trimmed = text.trimmingSpaces
        guard trimmed.contains("=") else {
            return rate(trimmed).map { BandwidthSchedule(bytesPerSecond: $0) }
        }
        var entries: [Entry] = []
        var covered = [Bool](repeating: false, count: DailyWindow.minutesPerDay)
        for item in trimmed.split(separator: ",", omittingEmptySubsequences: false) {
            let parts = item.split(separator: "=", omittingEmptySubsequences: false)
            guard parts.count == 2 else {
                return .failure(ValidationProblem("'\(item.trimmingSpaces)' is not a window=rate pair like 08:00-18:00=2MiB"))
            }
            guard let window = DailyWindow(String(parts[0])) else {
                return .failure(ValidationProblem("'\(parts[0].trimmingSpaces)' is not a UTC window like 08:00-18:00"))
            }
            let bytesPerSecond: Int64?
            switch rate(parts[1].trimmingSpaces) {
            case .success(let value): bytesPerSecond = value
            case .failure(let problem): return .failure(problem)
            }
            for minute in window.minutes {
                if covered[minute] {
                    return .failure(ValidationProblem("window \(parts[0].trimmingSpaces) overlaps an earlier one"))
                }
                covered[minute] = true
            }
            entries.append(Entry(window: window, bytesPerSecond: bytesPerSecond))
        }
        return .success(BandwidthSchedule(constant: nil, entries: entries))
    }

    /// `off`, or a size per second of at least `minimumRate`.
    private static func rate(_ text: String) -> Result<Int64?, ValidationProblem> {
        if text == "off" { return .success(nil) }
        guard let bytes = Units.size(text) else {
            return .failure(ValidationProblem("'\(text)' is not a rate like 2MiB (bytes per second) or off"))
        }
        guard bytes >= minimumRate else {
            return .failure(ValidationProblem("'\(text)' is below the smallest cap, \(minimumRate) bytes per second"))
        }
        return .success(bytes)
    }

    /// The cap in bytes per second at `millis` (Unix epoch milliseconds), nil for none.
    public func limit(at millis: Int64) -> Int64? {
        guard !entries.isEmpty else { return constant }
        return entries.first { $0.window.contains(millis) }?.bytesPerSecond
    }

    /// The first time after `millis` at which `limit(at:)` differs from now, or nil if it never
    /// changes: when the service should apply the schedule again.
    public func nextChange(after millis: Int64) -> Int64? {
        let current = limit(at: millis)
        let boundaries = entries.flatMap { [$0.window.start, $0.window.end] }
        // Every change happens at a window boundary; walk them in time order for a day.
        let candidates = boundaries.map { minute in
            DailyWindow.next(minuteOfDay: minute, after: millis)
        }.sorted()
        return candidates.first { limit(at: $0) != current }
    }
}
