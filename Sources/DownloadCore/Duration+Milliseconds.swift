/// Spans of time cross module boundaries as `Duration`; instants are milliseconds since the Unix
/// epoch (`Int64`), as the store keeps them. These convert a span for arithmetic with instants.
extension Duration {
    /// Whole milliseconds, rounded toward zero.
    public var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// Seconds as a floating-point number, for APIs that take one (libcurl options, metrics).
    public var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
