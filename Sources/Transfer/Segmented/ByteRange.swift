/// One byte range of a segmented download and how far it got: bytes `start..<end` of the
/// representation, of which `start..<next` are on disk. The service persists every range's `next`
/// (from `SegmentedProgress` and `SegmentedResult`), and after a fault or a crash starts the
/// download again with the ranges as persisted: each one goes on from its own `next`.
public struct ByteRange: Sendable, Equatable, Hashable {
    public var start: Int64
    /// Exclusive.
    public var end: Int64
    /// The first byte not yet on disk.
    public var next: Int64

    public init(start: Int64, end: Int64, next: Int64? = nil) {
        self.start = start
        self.end = end
        self.next = min(max(next ?? start, start), end)
    }

    public var isDone: Bool { next >= end }
    public var bytesOnDisk: Int64 { next - start }

    /// The longest range `pieces` makes.
    public static let pieceSize: Int64 = 16 << 20

    /// Bytes `start..<size` in ranges for `connections` at a time: `connections` of them, or more
    /// of at most `pieceSize` for a large file, so that the ranges fill the file roughly front to
    /// back (each connection takes the next range as it finishes one) and it can be hashed as it
    /// fills. `start` is where what is on disk already ends (a first part, say).
    public static func pieces(from start: Int64 = 0, size: Int64, connections: Int) -> [ByteRange] {
        let length = size - start
        return split(size: length, connections: max(connections, Int((length + pieceSize - 1) / pieceSize)))
            .map { ByteRange(start: $0.start + start, end: $0.end + start) }
    }

    /// `size` bytes split into `connections` ranges of (nearly) equal length, none empty (so fewer
    /// ranges for a file of fewer bytes than connections).
    public static func split(size: Int64, connections: Int) -> [ByteRange] {
        guard size > 0 else { return [] }
        let count = max(1, min(Int64(connections), size))
        let length = size / count
        return (0..<count).map { index in
            let start = index * length
            return ByteRange(start: start, end: index == count - 1 ? size : start + length)
        }
    }
}
