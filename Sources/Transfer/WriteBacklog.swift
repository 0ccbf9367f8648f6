import Synchronization

/// The chunks one file sink has handed to its writer and not yet got back: how far the disk side
/// (writing, then hashing) is behind the network. Bounding it bounds a fast transfer's memory when
/// the disk is slower than the network; a slow transfer seldom has more than one chunk out.
final class WriteBacklog: Sendable {
    private struct State {
        var chunks = 0
        /// The engine stopped taking bytes and waits for `onShrunk`.
        var engineWaits = false
    }

    /// Enough for writing and hashing to each have a chunk in hand and more waiting: 16 MiB. The
    /// digest is the slowest step of a fast download; with half the room a 512 MiB download cost
    /// 14 % more CPU (docs/benchmarks.md).
    static let defaultLimit = 8

    private let state = Mutex(State())
    private let pool: ChunkPool
    /// With this many chunks out the sink takes no more bytes...
    private let limit: Int
    /// ... until it is down to this many.
    private let resumeLevel: Int
    private let onShrunk: @Sendable () -> Void

    /// `onShrunk` runs (on the queue that gave the chunk back) when the engine may go on after `isFull`.
    init(limit: Int, pool: ChunkPool, onShrunk: @escaping @Sendable () -> Void) {
        self.limit = max(1, limit)
        resumeLevel = self.limit / 2
        self.pool = pool
        self.onShrunk = onShrunk
    }

    /// Whether the sink must stop taking bytes; if so, `onShrunk` runs once it may go on.
    func isFull() -> Bool {
        state.withLock { state in
            state.engineWaits = state.chunks >= limit
            return state.engineWaits
        }
    }

    /// A chunk goes out to be written.
    func add() {
        state.withLock { $0.chunks += 1 }
    }

    /// A chunk is done with (written and hashed, or skipped after an error): back to the pool.
    func giveBack(_ chunk: WriteChunk) {
        pool.giveBack(chunk)
        let wake = state.withLock { state in
            state.chunks -= 1
            guard state.engineWaits, state.chunks <= resumeLevel else { return false }
            state.engineWaits = false
            return true
        }
        if wake { onShrunk() }
    }
}
