import Glibc

/// The value of the `Date` field (RFC 9110 §5.6.7 IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`),
/// formatted once per second: a loop answering tens of thousands of requests a second only
/// reads the coarse clock for each.
struct HTTPDateCache {
    private var second = -1
    private var text = ""

    mutating func current() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &now)
        if now.tv_sec != second {
            second = now.tv_sec
            text = Self.format(secondsSinceEpoch: now.tv_sec)
        }
        return text
    }

    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    static func format(secondsSinceEpoch: Int) -> String {
        var time = time_t(secondsSinceEpoch)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(weekdays[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
