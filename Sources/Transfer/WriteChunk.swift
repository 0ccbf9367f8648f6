import Synchronization

/// A buffer of body bytes on their way to a file: filled on the engine queue, then handed to the
/// file's `FileWriter`, which writes it, hashes it and gives it back to the `ChunkPool`.
final class WriteChunk: @unchecked Sendable {
    // @unchecked: one queue at a time owns a chunk, and hands it on with `DispatchQueue.async` (or
    // the pool's Mutex), which orders the accesses: the engine queue while it fills the chunk, the
    // writer's queue while it writes it, then the pool until someone takes it.

    /// Large enough that writes and hashing run in big steps (curl hands over 16 KiB at a time),
    /// small enough that a sink's backlog of a few chunks stays a few MiB.
    static let capacity = 512 << 10

    private let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 64)
    private(set) var count = 0
    /// Where in the file the first byte belongs.
    private(set) var offset: Int64 = 0

    deinit { storage.deallocate() }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[..<count]) }
    var isFull: Bool { count == Self.capacity }

    /// Empties the chunk for bytes that start at `offset` in the file.
    func reset(at offset: Int64) {
        count = 0
        self.offset = offset
    }

    /// Copies as much of `source` as fits; returns how many bytes that was.
    func append(_ source: UnsafeRawBufferPointer) -> Int {
        let taken = min(source.count, Self.capacity - count)
        UnsafeMutableRawBufferPointer(rebasing: storage[count..<(count + taken)])
            .copyMemory(from: UnsafeRawBufferPointer(rebasing: source[..<taken]))
        count += taken
        return taken
    }

    /// Replaces the contents with up to `limit` bytes that `read` puts at the start of the space it
    /// is given; `read` returns how many it put there, or a negative number for an error (the
    /// chunk is then left empty). Returns what `read` returned.
    func refill(upTo limit: Int, _ read: (UnsafeMutableRawBufferPointer) -> Int) -> Int {
        let result = read(UnsafeMutableRawBufferPointer(rebasing: storage[..<min(limit, Self.capacity)]))
        count = max(0, result)
        return result
    }
}

/// The engine's spare chunks. Chunks in use are not counted here (each sink bounds its own backlog);
/// the pool keeps enough returned ones that a busy transfer does not allocate (and page in) a new
/// buffer for every chunk, and few enough that an idle engine holds little.
final class ChunkPool: Sendable {
    private static let maxSpares = 8

    private let spares = Mutex<[WriteChunk]>([])

    /// A chunk for bytes starting at `offset` in a file.
    func take(at offset: Int64) -> WriteChunk {
        let chunk = spares.withLock { $0.popLast() } ?? WriteChunk()
        chunk.reset(at: offset)
        return chunk
    }

    func giveBack(_ chunk: WriteChunk) {
        spares.withLock { spares in
            if spares.count < Self.maxSpares { spares.append(chunk) }
        }
    }
}
