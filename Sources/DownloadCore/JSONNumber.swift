/// Integers written straight into JSON bytes: shared by the API's JSON writer and the store's row
/// snapshots, which write several for every job.
public enum JSONNumber {
    /// The most bytes `write` writes: `-9223372036854775808`.
    public static let maxLength = 20

    /// Appends `number` in decimal, without making a String of it.
    public static func append(_ number: Int64, to bytes: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: maxLength) { buffer in
            guard let start = buffer.baseAddress else { return }
            bytes.append(contentsOf: UnsafeBufferPointer(start: start, count: write(number, to: start)))
        }
    }

    /// Writes `number` in decimal at `destination`, which has room for `maxLength` bytes; returns
    /// how many it wrote.
    public static func write(_ number: Int64, to destination: UnsafeMutablePointer<UInt8>) -> Int {
        var count = 0
        if number < 0 {
            destination[0] = UInt8(ascii: "-")
            count = 1
        }
        let digitsStart = count
        var magnitude = number.magnitude
        repeat {
            destination[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
            count += 1
            magnitude /= 10
        } while magnitude > 0
        var digits = UnsafeMutableBufferPointer(start: destination + digitsStart, count: count - digitsStart)
        digits.reverse()
        return count
    }
}
