/// Parsing of the configuration's durations (`200ms`, `5s`, `24h`, bare number = seconds) and
/// sizes (`1GiB`, bare number = bytes).
public enum Units {
    /// The span (to the millisecond), or nil if the text is not a duration.
    public static func duration(_ text: String) -> Duration? {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
        guard let seconds = number(text.trimmingSpaces, units: units, bare: 1), seconds < 9e15 else { return nil }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// Bytes, or nil if the text is not a size.
    public static func size(_ text: String) -> Int64? {
        let units: [(String, Double)] = [("KiB", 1024), ("MiB", 1_048_576), ("GiB", 1_073_741_824), ("TiB", 1_099_511_627_776), ("B", 1)]
        guard let value = number(text.trimmingSpaces, units: units, bare: 1), value < 9e18 else { return nil }
        return Int64(value)
    }

    private static func number(_ text: String, units: [(String, Double)], bare: Double) -> Double? {
        var digits = Substring(text)
        var scale = bare
        // Longest suffix first, so "ms" wins over "s".
        for (suffix, factor) in units.sorted(by: { $0.0.count > $1.0.count }) where text.hasSuffix(suffix) {
            digits = text.dropLast(suffix.count)
            scale = factor
            break
        }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
              let value = Double(digits), value.isFinite, value >= 0 else { return nil }
        return value * scale
    }
}
