/// A five-field cron expression in UTC — minute, hour, day of month, month, day of week — with
/// `*`, lists (`1,15`), ranges (`1-5`) and steps (`*/10`, `0-30/5`), as crontab(5) reads them:
/// when both day fields are restricted, a day matching either one fires. Day of week 0 and 7
/// are Sunday. Names (`MON`, `JAN`) and `@daily` are not taken.
public struct CronExpression: Sendable, Equatable {
    /// The text as given.
    public let text: String
    let minutes: Set<Int>
    let hours: Set<Int>
    let daysOfMonth: Set<Int>
    let months: Set<Int>
    let daysOfWeek: Set<Int>
    let dayOfMonthRestricted: Bool
    let dayOfWeekRestricted: Bool

    public struct Problem: Error, Sendable, Equatable {
        public let message: String
    }

    public static func parse(_ text: String) -> Result<CronExpression, Problem> {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard fields.count == 5 else {
            return .failure(Problem(message: "must have five fields (minute hour day-of-month month day-of-week), not \(fields.count)"))
        }
        let bounds = [("minute", 0...59), ("hour", 0...23), ("day of month", 1...31), ("month", 1...12), ("day of week", 0...7)]
        var sets: [Set<Int>] = []
        for (field, (name, range)) in zip(fields, bounds) {
            guard let values = values(of: field, in: range) else {
                return .failure(Problem(message: "has a \(name) field '\(field)' that is not *, a number in \(range.lowerBound)–\(range.upperBound), a list, a range or a step"))
            }
            sets.append(values)
        }
        // Sunday is 0 and 7.
        var daysOfWeek = sets[4]
        if daysOfWeek.remove(7) != nil { daysOfWeek.insert(0) }
        return .success(CronExpression(
            text: fields.joined(separator: " "), minutes: sets[0], hours: sets[1], daysOfMonth: sets[2], months: sets[3],
            daysOfWeek: daysOfWeek, dayOfMonthRestricted: !fields[2].hasPrefix("*"), dayOfWeekRestricted: !fields[4].hasPrefix("*")))
    }

    /// The values one field names, or nil when it is not a field of this grammar.
    private static func values(of field: Substring, in range: ClosedRange<Int>) -> Set<Int>? {
        var values = Set<Int>()
        for item in field.split(separator: ",", omittingEmptySubsequences: false) {
            let parts = item.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { return nil }
            var step = 1
            if parts.count == 2 {
                guard let number = Int(parts[1]), number >= 1, number <= range.upperBound + 1 else { return nil }
                step = number
            }
            let span: ClosedRange<Int>
            if parts[0] == "*" {
                span = range
            } else {
                let ends = parts[0].split(separator: "-", omittingEmptySubsequences: false)
                guard ends.count <= 2, let low = Int(ends[0]), let high = Int(ends.count == 2 ? ends[1] : ends[0]),
                      range.contains(low), range.contains(high), low <= high else { return nil }
                // `5/15` is 5, 20, 35, 50: a single start with a step runs to the field's end.
                span = parts.count == 2 && ends.count == 1 ? low...range.upperBound : low...high
            }
            values.formUnion(stride(from: span.lowerBound, through: span.upperBound, by: step))
        }
        return values
    }

    /// The first minute strictly after `after` (milliseconds since the epoch) that the expression
    /// names, in milliseconds; nil if none comes within eight years (`0 0 30 2 *`).
    public func next(after: Int64) -> Int64? {
        let minute: Int64 = 60_000
        var time = (after / minute + 1) * minute
        let limit = time + 8 * 366 * 86_400_000
        while time < limit {
            let date = CivilTime(millisecondsSinceEpoch: time)
            guard months.contains(date.month) else {
                time = CivilTime.startOfNextMonth(after: date)
                continue
            }
            guard matchesDay(date) else {
                time = (time / 86_400_000 + 1) * 86_400_000
                continue
            }
            guard hours.contains(date.hour) else {
                time = (time / 3_600_000 + 1) * 3_600_000
                continue
            }
            if minutes.contains(date.minute) { return time }
            time += minute
        }
        return nil
    }

    private func matchesDay(_ date: CivilTime) -> Bool {
        let byMonth = daysOfMonth.contains(date.day)
        let byWeek = daysOfWeek.contains(date.weekday)
        switch (dayOfMonthRestricted, dayOfWeekRestricted) {
        case (true, true): return byMonth || byWeek
        case (true, false): return byMonth
        case (false, true): return byWeek
        case (false, false): return true
        }
    }
}

/// A UTC calendar date and time of day, from milliseconds since the epoch.
struct CivilTime {
    var year: Int
    var month: Int
    var day: Int
    var hour: Int
    var minute: Int
    /// 0 is Sunday.
    var weekday: Int

    init(millisecondsSinceEpoch millis: Int64) {
        let days = Int(millis / 86_400_000)
        let secondsOfDay = Int(millis / 1000 - Int64(days) * 86_400)
        hour = secondsOfDay / 3600
        minute = secondsOfDay % 3600 / 60
        // 1970-01-01 was a Thursday.
        weekday = ((days % 7) + 11) % 7
        (year, month, day) = RFC3339.civilFromDays(days)
    }

    /// Midnight of the first day of the month after `date`, in milliseconds.
    static func startOfNextMonth(after date: CivilTime) -> Int64 {
        let (year, month) = date.month == 12 ? (date.year + 1, 1) : (date.year, date.month + 1)
        return Int64(RFC3339.daysFromCivil(year: year, month: month, day: 1)) * 86_400_000
    }
}
