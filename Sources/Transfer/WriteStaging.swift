import Dispatch

/// Where file sinks collect body bytes before handing them to their writer: chunks from the pool,
/// and the sinks now holding bytes not handed over yet.
///
/// A sink fills its chunk across curl's write callbacks and hands it over when it is full. Over
/// TLS curl delivers one record (at most 16 KiB) per socket event, so handing over at the end of
/// every event would cost the writer and the digest a wake-up per 16 KiB; instead a chunk that is
/// not full waits up to `holdTime` for more, and `MultiDriver` calls `flush` when that is up. So a
/// fast transfer hands over full chunks, and a slow one holds its bytes (and a chunk) for a few
/// milliseconds at most.
/// Used only on the engine queue.
final class WriteStaging {
    /// How long bytes may wait in a chunk that is not full: short enough that 1,000 slow transfers
    /// hold few chunks at a time, long enough that a fast one fills its chunk first.
    static let holdTime = DispatchTimeInterval.milliseconds(5)

    let pool = ChunkPool()
    /// How many chunks each sink that hashes may have out (`WriteBacklog`); sinks ask `backlogLimit(hashing:)`.
    private let backlogLimit: Int
    private var holding: [FileSink] = []

    init(backlogLimit: Int = WriteBacklog.defaultLimit) {
        self.backlogLimit = backlogLimit
    }

    /// How many chunks a sink may have out: a sink that does not hash (a segment of a segmented
    /// download, one of up to 16 connections of a job) only waits for its writes, so a quarter,
    /// 4 MiB, which bounds a segmented job's memory when the disk is slower than the network.
    func backlogLimit(hashing: Bool) -> Int {
        hashing ? backlogLimit : max(1, backlogLimit / 4)
    }

    /// Whether some sink may hold bytes: `flush` is due within `holdTime`.
    var isHolding: Bool { !holding.isEmpty }

    /// A chunk for `sink`, which `flush` will ask to hand it over.
    func chunk(for sink: FileSink, at offset: Int64, large: Bool) -> WriteChunk {
        holding.append(sink)
        return pool.take(at: offset, large: large)
    }

    func flush() {
        guard !holding.isEmpty else { return }
        let sinks = holding
        holding = []
        for sink in sinks { sink.flush() }
    }
}
