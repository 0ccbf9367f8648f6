/// Integers written straight into JSON bytes: shared by the API's JSON writer and the store's row
/// snapshots, which write several for every job.
public enum JSONNumber {
    /// Appends `number` in decimal, without making a String of it.
    public static func append(_ number: Int64, to bytes: inout [UInt8]) {
        if number < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = number.magnitude
        let start = bytes.count
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        bytes[start...].reverse()
    }
}
