import Dispatch
import Glibc
import Logging
import Synchronization
import Testing
@testable import Transfer

/// How body bytes reach the file: chunks written and hashed off the engine queue, a bounded
/// backlog that pauses the transfer, and a resumed prefix hashed from the file alongside.
@Suite struct FileWritingTests {
    @Test func aTransferThatOutrunsItsFileWaitsAndLosesNothing() async throws {
        // With a backlog of one chunk, nearly every chunk finds the previous one still being
        // written or hashed, so curl is paused and resumed over and over.
        let body = largeBody(8 << 20)
        let origin = try TestOrigin { .resource(body, etag: "\"v1\"", for: $0) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = TransferEngine(logger: Logger(label: "transfer-tests"), staging: WriteStaging(backlogLimit: 1))
        defer { engine.shutdown() }

        var request = download(origin.url("/big"), to: directory.file("out"))
        request.stallTimeout = 2
        let result = await engine.run(request)

        #expect(result.failure == nil)
        #expect(result.bytesOnDisk == Int64(body.count))
        #expect(result.sha256 == sha256Hex(body))
        #expect(sha256Hex(contents(directory.file("out"))) == sha256Hex(body))
    }

    @Test func aLargeResumedPrefixIsHashedAlongsideTheRest() async throws {
        // Reading the prefix back usually takes longer than the first chunks take to arrive: they
        // are written at once and read back after it.
        let body = largeBody(32 << 20)
        let prefixLength = 24 << 20
        let origin = try TestOrigin { .resource(body, etag: "\"v1\"", for: $0) }
        defer { origin.stop() }
        let run = try await downloadOverPartialFile(origin.url("/f"), holding: Array(body.prefix(prefixLength)), validator: "\"v1\"")
        let (path, result) = (run.path, run.result)

        #expect(result.httpStatus == 206)
        #expect(result.bytesThisAttempt == Int64(body.count - prefixLength))
        #expect(result.sha256 == sha256Hex(body))
        #expect(sha256Hex(contents(path)) == sha256Hex(body))
    }

    @Test func aLargePrefixReplacedMidHashDoesNotCount() async throws {
        let body = randomBytes(1 << 20)
        let origin = try TestOrigin { .resource(body, etag: "\"v2\"", for: $0) }
        defer { origin.stop() }
        let run = try await downloadOverPartialFile(origin.url("/f"), holding: largeBody(24 << 20), validator: "\"v1\"")
        let (path, result) = (run.path, run.result)

        #expect(result.httpStatus == 200)
        #expect(result.bytesOnDisk == Int64(body.count))
        #expect(result.sha256 == sha256Hex(body))
        #expect(contents(path) == body)
    }

    @Test func aDownloadedFileLeavesThePageCacheAsItGoes() async throws {
        let body = largeBody(32 << 20)
        let origin = try TestOrigin { .resource(body, etag: "\"v1\"", for: $0) }
        defer { origin.stop() }
        // Under the package's build directory: on a tmpfs (often /tmp) the page cache is the file.
        let directory = try TemporaryDirectory(under: ".build")
        let engine = TransferEngine(logger: Logger(label: "transfer-tests"))
        defer { engine.shutdown() }

        let result = await engine.run(download(origin.url("/big"), to: directory.file("out")))

        #expect(result.failure == nil)
        #expect(try residentBytes(directory.file("out"), count: Int(WriteBack.step)) == 0)
        #expect(sha256Hex(contents(directory.file("out"))) == sha256Hex(body))
    }

    /// The other half, that a file read back keeps its pages, shows in the page cache only while
    /// the kernel reclaims none of them, which it may do at any time (a busy machine, a balloon
    /// driver, DAMON): what is checked is that its writer asks for no drop.
    @Test func aFileReadBackKeepsItsPagesWhereAHashedOneDropsThem() async throws {
        let directory = try TemporaryDirectory()
        for hashing in [true, false] {
            let path = directory.file(hashing ? "hashed" : "unhashed")
            let fd = open(path, O_RDWR | O_CREAT, 0o644)
            try #require(fd >= 0)
            let writer = FileWriter(fd: fd, path: path, length: 0, hashing: hashing, extraDigest: nil, staging: WriteStaging()) {}
            #expect(writer.dropsWrittenPages == hashing)
            await withCheckedContinuation { done in writer.abandon { _ in done.resume() } }
        }
    }

    /// How many of the first `count` bytes of the file at `path` are in the page cache (mincore).
    private func residentBytes(_ path: String, count: Int) throws -> Int {
        let fd = open(path, O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        let mapped = try #require(mmap(nil, count, PROT_READ, MAP_SHARED, fd, 0))
        try #require(mapped != MAP_FAILED)
        defer { munmap(mapped, count) }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        var resident = [UInt8](repeating: 0, count: (count + page - 1) / page)
        try #require(mincore(mapped, count, &resident) == 0)
        return resident.filter { $0 & 1 == 1 }.count * page
    }

    /// `count` bytes without the cost of `randomBytes` (a system call per 8 bytes): a random block
    /// repeated. Its length is no multiple of a chunk's, so chunks swapped or hashed twice still
    /// change the digest.
    private func largeBody(_ count: Int) -> [UInt8] {
        let block = randomBytes(WriteChunk.capacity + 4099)
        var body: [UInt8] = []
        body.reserveCapacity(count + block.count)
        while body.count < count { body.append(contentsOf: block) }
        body.removeLast(body.count - count)
        return body
    }

    @Test func theBacklogWakesTheEngineOnceItIsHalfEmpty() {
        let wakes = Atomic<Int>(0)
        let pool = ChunkPool()
        let backlog = WriteBacklog(limit: 4, pool: pool) { wakes.add(1, ordering: .relaxed) }
        let chunks = (0..<4).map { pool.take(at: Int64($0) * Int64(WriteChunk.capacity)) }

        for _ in chunks { #expect(!backlog.isFull()); backlog.add() }
        #expect(backlog.isFull())
        backlog.giveBack(chunks[0])
        #expect(wakes.load(ordering: .relaxed) == 0)
        backlog.giveBack(chunks[1])
        #expect(wakes.load(ordering: .relaxed) == 1)
        backlog.giveBack(chunks[2])
        backlog.giveBack(chunks[3])
        // Nobody waits any more.
        #expect(wakes.load(ordering: .relaxed) == 1)
        #expect(!backlog.isFull())
    }

    @Test func aChunkTakesWhatFitsAndNoMore() {
        let chunk = ChunkPool().take(at: 100)
        let bytes = randomBytes(WriteChunk.capacity + 10)

        let first = bytes.withUnsafeBytes { chunk.append(UnsafeRawBufferPointer(rebasing: $0[..<10])) }
        let rest = bytes.withUnsafeBytes { chunk.append(UnsafeRawBufferPointer(rebasing: $0[10...])) }

        #expect(first == 10)
        #expect(rest == WriteChunk.capacity - 10)
        #expect(chunk.isFull)
        #expect(chunk.offset == 100)
        #expect(Array(chunk.bytes) == Array(bytes.prefix(WriteChunk.capacity)))
    }

    @Test func aFileResumedOffAPageBoundaryAndEndingOffOneIsWrittenWhole() async throws {
        let body = largeBody((6 << 20) + 77)
        let prefixLength = (1 << 20) + 1234
        let origin = try TestOrigin { .resource(body, etag: "\"v1\"", for: $0) }
        defer { origin.stop() }
        let run = try await downloadOverPartialFile(origin.url("/f"), holding: Array(body.prefix(prefixLength)), validator: "\"v1\"")

        #expect(run.result.httpStatus == 206)
        #expect(run.result.sha256 == sha256Hex(body))
        #expect(contents(run.path) == body)
    }

    @Test func aSinkStartsWithASmallChunkAndTakesLargeOnesOnceItFillsOne() throws {
        // A slow transfer never holds more than a small chunk; a fast one writes in large ones.
        let directory = try TemporaryDirectory()
        let staging = WriteStaging()
        let sink = try FileSink(path: directory.file("out"), keepExisting: false, extraDigest: nil,
                                staging: staging, onWritable: {})
        // Fills the small first chunk, then goes on in a large one.
        let body = largeBody(WriteChunk.smallCapacity + WriteChunk.capacity / 2)
        try body.withUnsafeBytes { try sink.write(UnsafeRawBufferPointer(rebasing: $0[..<100])) }
        #expect(staging.isHolding)
        try body.withUnsafeBytes { try sink.write(UnsafeRawBufferPointer(rebasing: $0[100...])) }
        staging.flush()
        let finished = Mutex<(Int64, String?)?>(nil)
        let done = DispatchSemaphore(value: 0)
        sink.finish { length, digests in
            finished.withLock { $0 = (length, try? digests.get()?.sha256) }
            done.signal()
        }
        done.wait()
        #expect(finished.withLock { $0?.0 } == Int64(body.count))
        #expect(finished.withLock { $0?.1 } == sha256Hex(body))
        #expect(contents(directory.file("out")) == body)
    }

    /// A chunk given back belongs to the pool until it is taken again: debug builds stop at a use
    /// or a second give-back before that, either of which would let two owners fill one buffer.
    @Test func aChunkGivenBackIsTheNextTakersAlone() async {
        let pool = ChunkPool()
        let chunk = pool.take(at: 0)
        pool.giveBack(chunk)
        let taken = pool.take(at: 5)
        #expect(taken === chunk)
        #expect(taken.offset == 5 && taken.bytes.isEmpty)
        #if DEBUG
        await #expect(processExitsWith: .failure) {
            let pool = ChunkPool()
            let chunk = pool.take(at: 0)
            pool.giveBack(chunk)
            pool.giveBack(chunk)
        }
        await #expect(processExitsWith: .failure) {
            let pool = ChunkPool()
            let chunk = pool.take(at: 0)
            pool.giveBack(chunk)
            _ = chunk.bytes
        }
        #endif
    }

    @Test func chunksComeInTwoSizes() {
        let pool = ChunkPool()
        #expect(pool.take(at: 0, large: false).capacity == WriteChunk.smallCapacity)
        #expect(pool.take(at: 0).capacity == WriteChunk.capacity)
    }

    @Test func manyTransfersShareAFewMiBOfReceiveBuffer() {
        #expect(MultiDriver.receiveBufferShare(running: 0) == 256 << 10)
        #expect(MultiDriver.receiveBufferShare(running: 63) == 64 << 10)
        #expect(MultiDriver.receiveBufferShare(running: 511) == 8 << 10)
        #expect(MultiDriver.receiveBufferShare(running: 999) == 8 << 10)
    }
}
