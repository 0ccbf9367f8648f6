import DownloadCore
@testable import DownloadService
import Testing
import TestSupport
import Transfer

/// A job with several connections starts with one that asks for the first part only; what that
/// part's response shows decides whether the rest comes over several connections or over one.
@Suite struct FirstPartSchedulingTests {
    private static let mebibyte: Int64 = 1 << 20

    @Test func aFirstPartOfALargeFileHandsTheRestToRanges() async throws {
        let run = try RunningScheduler(["max-transfers-per-host": "6"])
        try run.fixture.submit("big", connections: 4)
        run.pass()
        let first = try #require(run.transfers.all.first)
        #expect(first.request.firstPartLength == Self.mebibyte)
        _ = try writeFile(first.partialPath, Array(repeating: 7, count: Int(Self.mebibyte)))

        run.transfers.complete("big", with: firstPart(of: 9 * Self.mebibyte))

        #expect(await eventually { run.transfers.segments.count == 1 })
        let segments = try #require(run.transfers.segments.first)
        #expect(segments.size == 9 * Self.mebibyte && segments.validator == "\"v1\"" && segments.connections == 4)
        // What the first part wrote is kept as done; four ranges cover the rest, back to back.
        #expect(segments.ranges.first == ByteRange(start: 0, end: Self.mebibyte, next: Self.mebibyte))
        let rest = segments.ranges.dropFirst()
        #expect(rest.count == 4 && rest.allSatisfy { $0.next == $0.start })
        #expect(zip(segments.ranges, rest).allSatisfy { $0.end == $1.start } && rest.last?.end == 9 * Self.mebibyte)
        #expect(run.transfers.all.count == 1)
        // Still this node's running job, for a node that checks its jobs against the store.
        #expect(run.scheduler.startedJobIDs() == ["big"])
        await run.stop()
    }

    @Test func aSmallRestOrAWeakValidatorGoesOnOverOneConnection() async throws {
        for (size, validator) in [(Self.mebibyte + 10, "\"v1\""), (9 * Self.mebibyte, "W/\"weak\"")] {
            let run = try RunningScheduler([:])
            try run.fixture.submit("job", connections: 4)
            run.pass()
            let first = try #require(run.transfers.all.first)
            _ = try writeFile(first.partialPath, Array(repeating: 7, count: Int(Self.mebibyte)))

            run.transfers.complete("job", with: firstPart(of: size, validator: validator))

            #expect(await eventually { run.transfers.all.count == 2 })
            let next = try #require(run.transfers.all.last)
            #expect(next.request.firstPartLength == nil)
            guard case .file(_, let resumeValidator) = next.request.sink else { Issue.record("not a file sink"); return }
            #expect(resumeValidator == validator)
            #expect(run.transfers.segments.isEmpty)
            await run.stop()
        }
    }

    @Test func aWholeResponseGivesBackTheConnectionsItWillNotUse() async throws {
        let run = try RunningScheduler(["max-transfers-per-host": "4"])
        try run.fixture.submit("whole", connections: 4)
        try run.fixture.submit("next")
        run.pass()
        #expect(run.transfers.jobIDs == ["whole"])
        #expect(try run.waitingFor("next") == .hostLimit)

        // A 200: the origin does not honour Range, the file comes over this one connection.
        run.transfers.progress("whole", TransferProgress(bytesOnDisk: 1, bytesExpected: 9 * Self.mebibyte, validator: "\"v1\""))
        run.scheduler.queue.sync {}
        run.pass()
        #expect(run.transfers.jobIDs == ["whole", "next"])
        await run.stop()
    }

    private func firstPart(of size: Int64, validator: String = "\"v1\"") -> TransferResult {
        var result = TransferResult(httpStatus: 206, bytesOnDisk: Self.mebibyte, bytesThisAttempt: Self.mebibyte,
                                    bytesExpected: size, validator: validator)
        result.partReceived = true
        return result
    }
}
