/// Makes opaque, URL-safe ids that sort by creation: 48 bits of milliseconds and 80 bits of
/// randomness in Crockford base32 (26 characters, like a ULID). Within one millisecond the
/// random part is incremented, so ids from one generator are strictly increasing.
public struct DownloadIDGenerator: Sendable {
    private var lastMillis: Int64 = -1
    private var lastRandom: (UInt16, UInt64) = (0, 0)

    public init() {}

    public mutating func next(now: Int64) -> String {
        var millis = now
        var random: (UInt16, UInt64)
        if millis <= lastMillis {
            // Same (or earlier, after a clock step) millisecond: stay monotonic.
            millis = lastMillis
            random = lastRandom
            random.1 &+= 1
            if random.1 == 0 { random.0 &+= 1 }
        } else {
            random = (UInt16.random(in: 0...UInt16.max), UInt64.random(in: 0...UInt64.max))
        }
        lastMillis = millis
        lastRandom = random
        return Self.encode(millis: millis, high: random.0, low: random.1)
    }

    private static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    static func encode(millis: Int64, high: UInt16, low: UInt64) -> String {
        // 128 bits: 48 time, 16 high random, 64 low random; 26 base32 digits cover 130 bits.
        let top = (UInt64(UInt64(bitPattern: millis) & 0xFFFF_FFFF_FFFF) << 16) | UInt64(high)
        var out = [UInt8](repeating: 0, count: 26)
        var hi = top, lo = low
        for i in stride(from: 25, through: 0, by: -1) {
            out[i] = alphabet[Int(lo & 31)]
            lo = (lo >> 5) | ((hi & 31) << 59)
            hi >>= 5
        }
        return String(decoding: out, as: UTF8.self)
    }
}
