/// A daily window in UTC, like `01:00-06:00`; it may wrap past midnight (`22:00-04:00`).
public struct DailyWindow: Sendable, Equatable {
    /// Minutes after midnight UTC.
    public var start: Int
    public var end: Int

    static let minutesPerDay = 1440
    static let millisPerMinute: Int64 = 60_000

    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = Self.minutes(parts[0]), let end = Self.minutes(parts[1]), start != end else { return nil }
        self.start = start
        self.end = end
    }

    private static func minutes(_ text: Substring) -> Int? {
        let fields = text.trimmingSpaces.split(separator: ":")
        guard fields.count == 2, fields.allSatisfy({ $0.count == 2 }), let hour = Int(fields[0]), let minute = Int(fields[1]),
              (0...24).contains(hour), (0..<60).contains(minute), hour * 60 + minute <= minutesPerDay else { return nil }
        return hour * 60 + minute
    }

    public func contains(_ millis: Int64) -> Bool {
        let minute = minuteOfDay(millis)
        return start < end ? (minute >= start && minute < end) : (minute >= start || minute < end)
    }

    /// The next time the window opens, strictly after `millis` when it is closed now.
    public func nextOpening(after millis: Int64) -> Int64 {
        Self.next(minuteOfDay: start, after: millis)
    }

    /// The first time strictly after `millis` that is `minuteOfDay` minutes past a UTC midnight.
    static func next(minuteOfDay: Int, after millis: Int64) -> Int64 {
        let day = Int64(minutesPerDay) * millisPerMinute
        let dayStart = millis - millis.modulo(day)
        let today = dayStart + Int64(minuteOfDay % minutesPerDay) * millisPerMinute
        return today > millis ? today : today + day
    }

    /// The minutes of the day inside the window.
    var minutes: [Int] {
        start < end ? Array(start..<end) : Array(start..<Self.minutesPerDay) + Array(0..<end)
    }

    private func minuteOfDay(_ millis: Int64) -> Int {
        Int(millis.modulo(Int64(Self.minutesPerDay) * Self.millisPerMinute) / Self.millisPerMinute)
    }
}

extension Int64 {
    /// The non-negative remainder, also for times before 1970.
    func modulo(_ divisor: Int64) -> Int64 {
        let remainder = self % divisor
        return remainder >= 0 ? remainder : remainder + divisor
    }
}

extension StringProtocol {
    var trimmingSpaces: String {
        String(drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
    }
}
