/// Where file sinks collect body bytes before handing them to their writer: chunks from the pool,
/// and the sinks now holding bytes not handed over yet.
///
/// `MultiDriver` calls `flush` after every call into curl that can deliver body bytes. A sink fills
/// its chunk across curl's 16 KiB write callbacks (a whole socket read, or several in one event),
/// but no byte waits in memory past the event that brought it: a slow transfer holds no chunk
/// between events, and what is received is on its way to disk at once.
/// Used only on the engine queue.
final class WriteStaging {
    let pool = ChunkPool()
    /// How many chunks each sink may have out (`WriteBacklog`).
    let backlogLimit: Int
    private var holding: [FileSink] = []

    init(backlogLimit: Int = WriteBacklog.defaultLimit) {
        self.backlogLimit = backlogLimit
    }

    /// A chunk for `sink`, which `flush` will ask to hand it over.
    func chunk(for sink: FileSink, at offset: Int64) -> WriteChunk {
        holding.append(sink)
        return pool.take(at: offset)
    }

    func flush() {
        guard !holding.isEmpty else { return }
        let sinks = holding
        holding = []
        for sink in sinks { sink.flush() }
    }
}
