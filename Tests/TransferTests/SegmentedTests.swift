import Foundation
import Synchronization
import Testing
import Transfer

/// Segmented downloads against a real origin that honours (or ignores) Range.
@Suite struct SegmentedTests {
    /// Runs a segmented download to completion; `onProgress` sees every report.
    private func run(_ engine: TransferEngine, _ url: String, to path: String, size: Int, ranges: [ByteRange],
                     perConnectionCap: Int64? = nil, connections: Int? = nil,
                     onProgress: @escaping @Sendable (SegmentedProgress, SegmentedDownload?) -> Void = { _, _ in })
        async -> SegmentedResult {
        var request = download(url, to: path)
        request.maxSpeedBytesPerSecond = perConnectionCap
        let handle = Mutex<SegmentedDownload?>(nil)
        return await withCheckedContinuation { continuation in
            let started = SegmentedDownload.start(
                engine: engine, request: request, path: path, size: Int64(size), validator: "\"v1\"", ranges: ranges,
                connections: connections,
                onProgress: { progress in onProgress(progress, handle.withLock { $0 }) },
                onComplete: { continuation.resume(returning: $0) })
            handle.withLock { $0 = started }
        }
    }

    @Test func fourConnectionsFetchFourRangesAtOnceIntoOneFile() async throws {
        let body = randomBytes(4 << 20)
        // The origin holds each answer until four requests are in (or 10 s passed): with fewer
        // connections at once, the test would wait, then fail.
        let arrived = Atomic<Int>(0)
        let origin = try TestOrigin { request in
            arrived.add(1, ordering: .sequentiallyConsistent)
            let deadline = Date().addingTimeInterval(10)
            while arrived.load(ordering: .sequentiallyConsistent) < 4, Date() < deadline { usleep(5000) }
            return .resource(body, etag: "\"v1\"", for: request)
        }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        let ranges = ByteRange.split(size: Int64(body.count), connections: 4)
        let result = await run(engine, origin.url("/f"), to: directory.file("f"), size: body.count, ranges: ranges)

        #expect(result.isComplete)
        #expect(result.singleConnection == nil)
        #expect(result.sha256 == sha256Hex(body))
        #expect(sha256Hex(contents(directory.file("f"))) == sha256Hex(body))
        #expect(result.ranges.allSatisfy { $0.isDone })
        let requests = origin.requests
        let asked = Set(requests.compactMap { $0.header("Range") })
        #expect(asked == Set(ranges.map { "bytes=\($0.start)-\($0.end - 1)" }))
        #expect(requests.allSatisfy { $0.header("If-Range") == "\"v1\"" })
        #expect(origin.mostConcurrentResponses == 4)
        #expect(origin.bodyBytesServed == body.count)
    }

    @Test func moreRangesThanConnectionsTakeTurnsAndTheDigestIsOfTheWholeFile() async throws {
        let body = randomBytes(4 << 20)
        let origin = try TestOrigin { .resource(body, etag: "\"v1\"", for: $0) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        let ranges = ByteRange.split(size: Int64(body.count), connections: 8)
        let result = await run(engine, origin.url("/f"), to: directory.file("f"), size: body.count, ranges: ranges,
                               perConnectionCap: 2 << 20, connections: 2)

        #expect(result.isComplete && result.sha256 == sha256Hex(body))
        #expect(sha256Hex(contents(directory.file("f"))) == sha256Hex(body))
        #expect(Set(origin.requests.compactMap { $0.header("Range") }) == Set(ranges.map { "bytes=\($0.start)-\($0.end - 1)" }))
        #expect(origin.mostConcurrentResponses <= 2)
    }

    @Test func piecesAreAtMostSixteenMiBAndAtLeastOnePerConnection() {
        let large = ByteRange.pieces(size: 1 << 30, connections: 8)
        #expect(large.count == 64 && large.allSatisfy { $0.end - $0.start <= ByteRange.pieceSize })
        #expect(large.first?.start == 0 && large.last?.end == 1 << 30)
        #expect(ByteRange.pieces(size: 8 << 20, connections: 4).count == 4)
    }

    @Test func anInterruptedDownloadResumesEveryRangeFromItsSavedOffset() async throws {
        let body = randomBytes(8 << 20)
        let size = Int64(body.count)
        let directory = try TemporaryDirectory()
        let path = directory.file("f")

        // First run: stopped half way. What a crash leaves is the last progress the service saved,
        // which lags behind what is on disk.
        let saved = Mutex<[ByteRange]>([])
        let first = try TestOrigin { .resource(body, etag: "\"v1\"", for: $0) }
        let engine = makeEngine()
        let interrupted = await run(engine, first.url("/f"), to: path, size: body.count,
                                    ranges: ByteRange.split(size: size, connections: 4), perConnectionCap: 512 * 1024) { progress, download in
            saved.withLock { $0 = progress.ranges }
            if progress.bytesOnDisk >= size / 2 { download?.cancel() }
        }
        engine.shutdown()
        first.stop()
        let ranges = saved.withLock { $0 }
        #expect(!interrupted.isComplete)
        #expect(ranges.allSatisfy { $0.next > $0.start && !$0.isDone }, "every range made progress: \(ranges)")
        let receivedFirst = interrupted.unfinished.values.reduce(0) { $0 + $1.bytesThisAttempt }

        // Second run, from the saved offsets.
        let second = try TestOrigin { .resource(body, etag: "\"v1\"", for: $0) }
        defer { second.stop() }
        let resumingEngine = makeEngine()
        defer { resumingEngine.shutdown() }
        let result = await run(resumingEngine, second.url("/f"), to: path, size: body.count, ranges: ranges)

        #expect(result.isComplete)
        #expect(result.sha256 == sha256Hex(body))
        #expect(sha256Hex(contents(path)) == sha256Hex(body))
        let asked = Set(second.requests.compactMap { $0.header("Range") })
        #expect(asked == Set(ranges.map { "bytes=\($0.next)-\($0.end - 1)" }))
        let fetchedTwice = Int(receivedFirst) + second.bodyBytesServed - body.count
        #expect(fetchedTwice >= 0)
        #expect(Double(fetchedTwice) <= 0.1 * Double(body.count), "\(fetchedTwice) bytes fetched twice")
    }

    @Test func aFailedRangeIsRetriedAlone() async throws {
        let body = randomBytes(1 << 20)
        let refusedOnce = Atomic<Bool>(false)
        let origin = try TestOrigin { request in
            if request.header("Range")?.hasPrefix("bytes=0-") == true, !refusedOnce.exchange(true, ordering: .relaxed) {
                return OriginResponse(status: 503, headers: [("Retry-After", "7")], body: Array("busy".utf8))
            }
            return .resource(body, etag: "\"v1\"", for: request)
        }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        let first = await run(engine, origin.url("/f"), to: directory.file("f"), size: body.count,
                              ranges: ByteRange.split(size: Int64(body.count), connections: 4))
        #expect(!first.isComplete)
        #expect(Array(first.unfinished.keys) == [0])
        #expect(first.unfinished[0]?.httpStatus == 503)
        #expect(first.unfinished[0]?.retryAfter == 7)
        #expect(first.ranges.filter { $0.isDone }.count == 3)

        let requestsBefore = origin.requests.count
        let retry = await run(engine, origin.url("/f"), to: directory.file("f"), size: body.count, ranges: first.ranges)
        #expect(retry.isComplete)
        #expect(retry.sha256 == sha256Hex(body))
        #expect(contents(directory.file("f")) == body)
        #expect(origin.requests.count == requestsBefore + 1)
    }

    @Test func anOriginIgnoringRangeGetsOneConnection() async throws {
        let body = randomBytes(2 << 20)
        let origin = try TestOrigin { .resource(body, etag: "\"v1\"", for: $0, honourRange: false) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }

        var request = download(origin.url("/f"), to: directory.file("f"))
        request.extraDigest = .sha512
        let result = await withCheckedContinuation { continuation in
            _ = SegmentedDownload.start(
                engine: engine, request: request, path: directory.file("f"), size: Int64(body.count), validator: "\"v1\"",
                ranges: ByteRange.split(size: Int64(body.count), connections: 4),
                onProgress: { _ in }, onComplete: { continuation.resume(returning: $0) })
        }

        let single = try #require(result.singleConnection)
        #expect(result.isComplete)
        #expect(single.httpStatus == 200)
        #expect(single.sha256 == sha256Hex(body))
        #expect(single.extraDigest != nil)
        #expect(contents(directory.file("f")) == body)
        // The single connection asks for the whole file (a range request still in flight when the
        // ranges were stopped may be logged after it).
        #expect(origin.requests.contains { $0.header("Range") == nil })
    }

    @Test func rangesSplitTheFileWithoutGapsOrOverlap() {
        #expect(ByteRange.split(size: 10, connections: 4).map { [$0.start, $0.end] } == [[0, 2], [2, 4], [4, 6], [6, 10]])
        #expect(ByteRange.split(size: 3, connections: 8).count == 3)
        #expect(ByteRange.split(size: 0, connections: 4).isEmpty)
        #expect(ByteRange.split(size: 100, connections: 1) == [ByteRange(start: 0, end: 100)])
        #expect(ByteRange(start: 10, end: 20, next: 25).isDone)
    }
}
