/// RFC 3339 date-times to and from milliseconds since the Unix epoch, without Foundation's
/// formatters (which are slow and locale-sensitive).
public enum RFC3339 {
    /// Parses `2026-11-21T10:00:00Z`, with optional fractional seconds and a `Z` or `±hh:mm` offset.
    public static func parse(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count >= 20 else { return nil }
        func digits(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= b.count else { return nil }
            var value = 0
            for i in from..<(from + count) {
                guard b[i] >= 48, b[i] <= 57 else { return nil }
                value = value * 10 + Int(b[i] - 48)
            }
            return value
        }
        guard let year = digits(0, 4), b[4] == UInt8(ascii: "-"), let month = digits(5, 2), b[7] == UInt8(ascii: "-"),
              let day = digits(8, 2), b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t"),
              let hour = digits(11, 2), b[13] == UInt8(ascii: ":"), let minute = digits(14, 2),
              b[16] == UInt8(ascii: ":"), let second = digits(17, 2) else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
              hour < 24, minute < 60, second < 61 else { return nil }
        var i = 19
        var millis = 0
        if b[i] == UInt8(ascii: ".") {
            i += 1
            var scale = 100
            let start = i
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                millis += Int(b[i] - 48) * scale
                scale /= 10
                i += 1
            }
            guard i > start else { return nil }
        }
        guard i < b.count else { return nil }
        var offsetSeconds = 0
        if b[i] == UInt8(ascii: "Z") || b[i] == UInt8(ascii: "z") {
            i += 1
        } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
            guard let oh = digits(i + 1, 2), i + 3 < b.count, b[i + 3] == UInt8(ascii: ":"), let om = digits(i + 4, 2),
                  oh < 24, om < 60 else { return nil }
            offsetSeconds = (oh * 3600 + om * 60) * (b[i] == UInt8(ascii: "+") ? 1 : -1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86400 + hour * 3600 + minute * 60 + min(second, 59) - offsetSeconds
        return Int64(seconds) * 1000 + Int64(millis)
    }

    /// Formats as `2026-11-21T10:00:00Z` (UTC, whole seconds, rounded down): the API's and the
    /// webhooks' date-times. Whole seconds are what every client's default date decoder reads
    /// (Swift's `ISO8601DateFormatter` rejects fractional seconds unless told to expect them);
    /// nothing is ordered by them, ids and event ids carry the order.
    public static func format(_ millis: Int64) -> String {
        formatted(millis, withMilliseconds: false)
    }

    /// Formats as `2026-11-21T10:00:00.250Z` (UTC, millisecond precision), for log lines.
    public static func formatWithMilliseconds(_ millis: Int64) -> String {
        formatted(millis, withMilliseconds: true)
    }

    /// The length of what `write` writes: `2026-11-21T10:00:00Z`.
    public static let length = 20

    /// Writes `format(millis)` into `buffer` (room for `length` bytes, as a JSON writer's own
    /// memory has, so that no String is made) and returns how many bytes it wrote; nil, writing
    /// nothing, for a year outside 0...9999 (`format` writes those).
    public static func write(_ millis: Int64, to buffer: UnsafeMutableBufferPointer<UInt8>) -> Int? {
        let time = Civil(millis)
        guard (0...9999).contains(time.year) else { return nil }
        return time.write(withMilliseconds: false, to: buffer)
    }

    /// Written digit by digit into the string's own storage: every job a response or webhook shows
    /// carries several date-times, so this runs many times per request.
    private static func formatted(_ millis: Int64, withMilliseconds: Bool) -> String {
        let time = Civil(millis)
        // Years outside 0...9999 are not RFC 3339; they are written with as many digits as they need.
        guard (0...9999).contains(time.year) else {
            let date = "\(pad(time.year, 4))-\(pad(time.month, 2))-\(pad(time.day, 2))T\(pad(time.secondOfDay / 3600, 2)):"
                + "\(pad(time.secondOfDay / 60 % 60, 2)):\(pad(time.secondOfDay % 60, 2))"
            return withMilliseconds ? date + "." + pad(time.ms, 3) + "Z" : date + "Z"
        }
        return String(unsafeUninitializedCapacity: withMilliseconds ? length + 4 : length) { buffer in
            time.write(withMilliseconds: withMilliseconds, to: buffer)
        }
    }

    /// A moment in UTC, in the calendar's parts.
    private struct Civil {
        let year, month, day, secondOfDay, ms: Int

        init(_ millis: Int64) {
            let totalSeconds = millis >= 0 ? millis / 1000 : (millis - 999) / 1000
            ms = Int(millis - totalSeconds * 1000)
            let days = totalSeconds >= 0 ? totalSeconds / 86400 : (totalSeconds - 86399) / 86400
            secondOfDay = Int(totalSeconds - days * 86400)
            (year, month, day) = civilFromDays(Int(days))
        }

        /// For a year in 0...9999, into room for `length` bytes (4 more with milliseconds).
        func write(withMilliseconds: Bool, to buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
            let length = withMilliseconds ? RFC3339.length + 4 : RFC3339.length
            func put(_ value: Int, _ width: Int, at offset: Int) {
                var value = value
                for index in stride(from: offset + width - 1, through: offset, by: -1) {
                    buffer[index] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
            }
            put(year, 4, at: 0)
            buffer[4] = UInt8(ascii: "-")
            put(month, 2, at: 5)
            buffer[7] = UInt8(ascii: "-")
            put(day, 2, at: 8)
            buffer[10] = UInt8(ascii: "T")
            put(secondOfDay / 3600, 2, at: 11)
            buffer[13] = UInt8(ascii: ":")
            put(secondOfDay / 60 % 60, 2, at: 14)
            buffer[16] = UInt8(ascii: ":")
            put(secondOfDay % 60, 2, at: 17)
            if withMilliseconds {
                buffer[19] = UInt8(ascii: ".")
                put(ms, 3, at: 20)
            }
            buffer[length - 1] = UInt8(ascii: "Z")
            return length
        }
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let s = String(value)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's days-from-civil algorithms (proleptic Gregorian calendar).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    static func civilFromDays(_ days: Int) -> (Int, Int, Int) {
        let z = days + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp + (mp < 10 ? 3 : -9)
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
