import DownloadCore
@testable import DownloadService
import Persistence
import Testing
import TestSupport
@testable import Transfer

/// A job over several connections once its first part showed the origin honours Range: its
/// ranges' progress as the store keeps it, how their end settles, and how they go on after a stop.
@Suite struct RangesTests {
    static let mebibyte: Int64 = 1 << 20
    static let size = 3 * mebibyte

    /// "big" (four connections) whose first part came in: its ranges run.
    func rangesRunning() async throws -> RunningScheduler {
        let run = try RunningScheduler()
        try run.fixture.submit("big", connections: 4)
        try run.begin("big")
        try run.fixture.writePartial("big", Array(repeating: 7, count: Int(Self.mebibyte)))
        var part = TransferResult(httpStatus: 206, bytesOnDisk: Self.mebibyte, bytesThisAttempt: Self.mebibyte,
                                  bytesExpected: Self.size, validator: "\"v1\"")
        part.partReceived = true
        run.transfers.complete("big", with: part)
        #expect(await eventually { run.transfers.segments.count == 1 })
        return run
    }

    /// Every range of the first segmented attempt, as far as `done` says each got.
    func ranges(_ run: RunningScheduler, done: Bool) throws -> [ByteRange] {
        try #require(run.transfers.segments.first).ranges.map {
            ByteRange(start: $0.start, end: $0.end, next: done ? $0.end : $0.next)
        }
    }

    @Test func rangesProgressIsSavedEveryQuarterSecond() async throws {
        let run = try await rangesRunning()
        let segments = try #require(run.transfers.segments.first)
        var advanced = segments.ranges
        advanced[1].next += 1000
        segments.onProgress(SegmentedProgress(ranges: advanced))
        run.settle()
        #expect(run.scheduler.liveBytes(of: "big") == Self.mebibyte + 1000)
        // Saved as planned before they started; their progress is saved a quarter second later.
        #expect(try run.job("big").ranges.map(\.next) == segments.ranges.map(\.next))

        run.clock.advance(by: .milliseconds(250))
        segments.onProgress(SegmentedProgress(ranges: advanced))
        run.settle()
        let saved = try run.job("big")
        #expect(saved.ranges.map(\.next) == advanced.map(\.next))
        #expect(saved.bytesReceived == Self.mebibyte + 1000)
        #expect(saved.validator == "\"v1\"" && saved.bytesExpected == Self.size)
        await run.stop()
    }

    @Test func rangesThatAllCameInCompleteTheJob() async throws {
        let run = try await rangesRunning()
        let bytes = Array(repeating: UInt8(7), count: Int(Self.size))
        let digest = try run.fixture.writePartial("big", bytes)
        try #require(run.transfers.segments.first).onComplete(SegmentedResult(ranges: try ranges(run, done: true), unfinished: [:], sha256: digest))

        #expect(await eventually { (try? run.job("big").state) == .completed })
        let done = try run.job("big")
        #expect(done.sha256 == digest && done.httpStatus == 206 && done.ranges.isEmpty)
        #expect(run.fixture.destinationBytes("files/big")?.count == Int(Self.size))
        #expect(try run.outcomes("big") == ["completed"])
        await run.stop()
    }

    /// The origin answered a range with the whole file, which then came over one connection.
    @Test func anOriginThatSendsTheWholeFileFinishesOverOneConnection() async throws {
        let run = try await rangesRunning()
        let bytes = Array(repeating: UInt8(9), count: Int(Self.size))
        let digest = try run.fixture.writePartial("big", bytes)
        let whole = TransferResult(httpStatus: 200, bytesOnDisk: Self.size, bytesThisAttempt: Self.size, bytesExpected: Self.size,
                                   sha256: digest)
        try #require(run.transfers.segments.first).onComplete(
            SegmentedResult(ranges: try ranges(run, done: false), unfinished: [:], singleConnection: whole))

        #expect(await eventually { (try? run.job("big").state) == .completed })
        #expect(try run.job("big").ranges.isEmpty)
        #expect(run.fixture.destinationBytes("files/big") == bytes)
        await run.stop()
    }

    /// A range that came back as other bytes than asked for: nothing of the file is trusted.
    @Test func aRangeOfOtherBytesStartsTheJobOver() async throws {
        let run = try await rangesRunning()
        try #require(run.transfers.segments.first).onComplete(SegmentedResult(
            ranges: try ranges(run, done: false), unfinished: [1: TransferResult(failure: .rangeMismatch("bytes 0-9/10"))]))

        #expect(await eventually { (try? run.outcomes("big")) == ["retry"] })
        let retried = try run.job("big")
        #expect(retried.state == .queued && retried.bytesReceived == 0 && retried.validator == nil && retried.ranges.isEmpty)
        #expect(!run.fixture.partialExists("big"))
        await run.stop()
    }

    /// Paused, a segmented job keeps every range's progress; resumed, its ranges go on from there
    /// without asking for a first part again.
    @Test func aPausedSegmentedJobResumesItsRanges() async throws {
        let run = try await rangesRunning()
        try run.stop("big", as: .paused, reason: .pause)
        #expect(await eventually { (try? run.outcomes("big")) == ["paused"] })
        #expect(run.transfers.segmentsCancels == 1)
        let paused = try run.job("big")
        #expect(paused.ranges.count == 5 && paused.bytesReceived == Self.mebibyte)

        try run.resume("big")
        #expect(run.transfers.segments.count == 2)
        #expect(run.transfers.segments.last?.ranges == run.transfers.segments.first?.ranges)
        #expect(run.transfers.segments.last?.connections == 4)
        #expect(run.transfers.all.count == 1)
        await run.stop()
    }

    /// Ranges whose partial file is gone cannot go on: the job starts over with a first part.
    @Test func rangesWithoutTheirPartialFileStartOver() async throws {
        let run = try await rangesRunning()
        try run.stop("big", as: .paused, reason: .pause)
        #expect(await eventually { (try? run.outcomes("big")) == ["paused"] })
        run.fixture.partials.remove("big")

        try run.resume("big")
        #expect(run.transfers.segments.count == 1)
        let restart = try #require(run.transfers.all.last).request
        #expect(run.transfers.all.count == 2 && restart.firstPartLength == Self.mebibyte)
        guard case .file(_, let validator) = restart.sink else { Issue.record("not a file sink"); return }
        #expect(validator == nil)
        await run.stop()
    }

    @Test func shutdownStopsRangesAndKeepsTheirProgress() async throws {
        let run = try await rangesRunning()
        await run.stop()
        #expect(run.transfers.segmentsCancels == 1)
        #expect(try run.outcomes("big") == ["interrupted"])
        #expect(try run.job("big").ranges.count == 5)
        #expect(try run.job("big").state == .queued)
    }
}
