import Glibc
import Synchronization

/// A buffer of body bytes on their way to a file: filled on the engine queue, then handed to the
/// file's `FileWriter`, which writes it, hashes it and gives it back to the `ChunkPool`.
///
/// Two sizes: a sink starts with a small chunk and takes a large one only after filling a chunk,
/// so that a slow transfer (one of thousands, each receiving a few KiB per socket event) never
/// holds more than a small one, while a fast one writes and hashes in big steps.
final class WriteChunk: @unchecked Sendable {
    // @unchecked: one queue at a time owns a chunk, and hands it on with `DispatchQueue.async` (or
    // the pool's Mutex), which orders the accesses: the engine queue while it fills the chunk, the
    // writer's queue while it writes it, then the pool until someone takes it. No one queue owns it,
    // so what debug builds check is the hand-over to the pool (`assertOwned`): a chunk given back
    // is used by no one, and given back once.

    /// A large chunk: large enough that writes and hashing run in big steps (curl hands over
    /// 16 KiB at a time), small enough that a sink's backlog of a few chunks stays a few MiB.
    /// 2 MiB rather than 512 KiB took a 512 MiB download's CPU down by a tenth (fewer hand-offs
    /// between the engine, the writer and the digest, fewer and larger writes; docs/benchmarks.md).
    static let capacity = 2 << 20
    /// A small chunk: a few socket reads' worth.
    static let smallCapacity = 32 << 10

    let capacity: Int
    /// Mapped rather than taken from malloc: malloc keeps freed pages resident (in whichever
    /// thread's arena they came from), so the chunks that thousands of slow transfers have out at
    /// the peak of a burst would stay in the RSS after it. munmap gives them back.
    private let storage: UnsafeMutableRawBufferPointer
    private let isMapped: Bool
    private(set) var count = 0
    /// Where in the file the first byte belongs.
    private(set) var offset: Int64 = 0
    #if DEBUG
    /// The chunk is back in the pool (or was dropped by it): whoever still holds it must not use it.
    private let isGivenBack = Atomic<Bool>(false)
    #endif

    init(large: Bool) {
        capacity = large ? Self.capacity : Self.smallCapacity
        (storage, isMapped) = Self.allocate(capacity)
    }

    deinit {
        if isMapped {
            munmap(storage.baseAddress, capacity)
        } else {
            storage.deallocate()
        }
    }

    var bytes: UnsafeRawBufferPointer {
        assertOwned()
        return UnsafeRawBufferPointer(rebasing: storage[..<count])
    }
    var isFull: Bool { count == capacity }
    var isLarge: Bool { capacity == Self.capacity }

    /// Empties the chunk for bytes that start at `offset` in the file.
    func reset(at offset: Int64) {
        assertOwned()
        count = 0
        self.offset = offset
    }

    /// Copies as much of `source` as fits; returns how many bytes that was.
    func append(_ source: UnsafeRawBufferPointer) -> Int {
        assertOwned()
        let taken = min(source.count, capacity - count)
        UnsafeMutableRawBufferPointer(rebasing: storage[count..<(count + taken)])
            .copyMemory(from: UnsafeRawBufferPointer(rebasing: source[..<taken]))
        count += taken
        return taken
    }

    /// Replaces the contents with up to `limit` bytes that `read` puts at the start of the space it
    /// is given; `read` returns how many it put there, or a negative number for an error (the
    /// chunk is then left empty). Returns what `read` returned.
    func refill(upTo limit: Int, _ read: (UnsafeMutableRawBufferPointer) -> Int) -> Int {
        assertOwned()
        let result = read(UnsafeMutableRawBufferPointer(rebasing: storage[..<min(limit, capacity)]))
        count = max(0, result)
        return result
    }

    /// The pool hands the chunk out: its taker owns it.
    fileprivate func leavePool() {
        #if DEBUG
        isGivenBack.store(false, ordering: .relaxed)
        #endif
    }

    /// The pool takes the chunk back. Given back twice, it would go to two takers at once.
    fileprivate func enterPool() {
        #if DEBUG
        precondition(!isGivenBack.exchange(true, ordering: .relaxed), "a write chunk was given back to the pool twice")
        #endif
    }

    /// Checks in debug builds that the caller may use the chunk: it has not been given back.
    private func assertOwned() {
        #if DEBUG
        precondition(!isGivenBack.load(ordering: .relaxed), "a write chunk was used after it was given back to the pool")
        #endif
    }

    private static func allocate(_ capacity: Int) -> (UnsafeMutableRawBufferPointer, mapped: Bool) {
        if let mapped = mmap(nil, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
           mapped != MAP_FAILED {
            return (UnsafeMutableRawBufferPointer(start: mapped, count: capacity), true)
        }
        // Out of mappings.
        return (.allocate(byteCount: capacity, alignment: 64), false)
    }
}

/// The engine's spare chunks. Chunks in use are not counted here (each sink bounds its own backlog);
/// the pool keeps enough returned ones that a busy transfer does not allocate (and page in) a new
/// buffer for every chunk, and few enough that an idle engine holds little.
final class ChunkPool: Sendable {
    private struct Spares {
        var large: [WriteChunk] = []
        var small: [WriteChunk] = []
    }

    /// A fast download's backlog (16 MiB), so that it takes no fresh mapping for each chunk.
    private static let maxLarge = 8
    /// 2 MiB at most, and mostly untouched: a slow transfer fills a few KiB of one.
    private static let maxSmall = 64

    private let spares = Mutex(Spares())

    /// A chunk for bytes starting at `offset` in a file.
    func take(at offset: Int64, large: Bool = true) -> WriteChunk {
        let spare = spares.withLock { large ? $0.large.popLast() : $0.small.popLast() }
        let chunk = spare ?? WriteChunk(large: large)
        chunk.leavePool()
        chunk.reset(at: offset)
        return chunk
    }

    func giveBack(_ chunk: WriteChunk) {
        chunk.enterPool()
        spares.withLock { spares in
            if chunk.isLarge {
                if spares.large.count < Self.maxLarge { spares.large.append(chunk) }
            } else if spares.small.count < Self.maxSmall {
                spares.small.append(chunk)
            }
        }
    }
}
