import Dispatch
import DownloadCore
@testable import DownloadService
import Persistence
import Testing
import TestSupport
@testable import Transfer

/// The segmented part of an attempt on its own, as the attempt runner hands it an attempt: what
/// follows a first part, the connections it gives back, how its ranges start and resume, when
/// their progress is saved (into a real store, through a completer on the same queue) and what
/// their end comes to.
@Suite struct SegmentedAttemptsTests {
    static let mebibyte: Int64 = 1 << 20
    static let size = 9 * mebibyte

    let fixture: ServiceFixture
    let queue = DispatchQueue(label: "fetchd.test.segmented")
    let transfers = FakeTransfers()
    let ledger: LoadLedger
    let segmented: SegmentedAttempts

    init() throws {
        fixture = try ServiceFixture()
        let configuration = try fixture.configuration(["max-transfers-per-host": "6"])
        ledger = LoadLedger(queue: queue, capacity: configuration.capacity)
        let completer = Completer(queue: queue, store: fixture.store, logger: ServiceFixture.quiet)
        segmented = SegmentedAttempts(queue: queue, ledger: ledger, completer: completer, transfers: transfers,
                                      template: TransferTemplate(configuration: configuration), partials: fixture.partials,
                                      clock: fixture.clock.clock, logger: ServiceFixture.quiet)
    }

    /// The attempt of a stored and claimed job over `connections`, counted in the ledger, its first
    /// connection asking for the first part. `adjust` sets any other field of the submission.
    func attempt(_ id: String = "big", connections: Int = 4,
                 _ adjust: (inout NewDownload) -> Void = { _ in }) throws -> ActiveAttempt {
        try fixture.submit(id, connections: connections, adjust)
        let job = try fixture.claim(id)
        var attempt = ActiveAttempt(download: job, transferID: TransferID(rawValue: 1), stopReason: nil,
                                    persistedAt: fixture.clock.now, attemptStartedAt: fixture.clock.now, discretionary: false,
                                    remainingBytes: 0)
        attempt.connections = connections
        attempt.mayUseRanges = connections > 1
        queue.sync { ledger.track(attempt, starting: true) }
        return attempt
    }

    /// The first connection's result: the first mebibyte of a file of `size`, with `validator`.
    func firstPart(of size: Int64 = Self.size, validator: String = "\"v1\"") -> TransferResult {
        var result = TransferResult(httpStatus: 206, bytesOnDisk: Self.mebibyte, bytesThisAttempt: Self.mebibyte,
                                    bytesExpected: size, validator: validator, effectiveURL: "http://origin.example/big")
        result.contentDisposition = "attachment; filename=\"big.iso\""
        result.partReceived = true
        return result
    }

    /// The attempt with its first part in (on disk too) and its ranges planned.
    func planned(_ adjust: (inout NewDownload) -> Void = { _ in }) throws -> ActiveAttempt {
        var attempt = try attempt("big", adjust)
        try fixture.writePartial("big", Array(repeating: 7, count: Int(Self.mebibyte)))
        let next = queue.sync { segmented.goOn(afterFirstPart: &attempt, firstPart()) }
        #expect(next == .ranges)
        return attempt
    }

    /// Starts the attempt's ranges, whose progress and end the test reports through the fake engine.
    func start(_ attempt: inout ActiveAttempt) -> Bool {
        queue.sync { segmented.start(&attempt, onProgress: { _ in }, onComplete: { _ in }) }
    }

    /// Host connections counted in the ledger now.
    var hostConnections: Int? { ledger.snapshot.runningByHost["origin.example:80"] }

    // MARK: - After the first part

    @Test func aLargeRestWithAStrongValidatorIsPlannedAsRanges() throws {
        let attempt = try planned()

        let job = attempt.download
        #expect(job.bytesExpectedFromOrigin == Self.size && job.validator == "\"v1\"")
        // What the first part wrote is kept as done; the rest is split back to back, none begun.
        #expect(job.ranges.first == RangeProgress(start: 0, end: Self.mebibyte, next: Self.mebibyte))
        let rest = job.ranges.dropFirst()
        #expect(rest.count >= 4 && rest.allSatisfy { $0.next == $0.start })
        #expect(zip(job.ranges, rest).allSatisfy { $0.end == $1.start } && rest.last?.end == Self.size)
        #expect(attempt.firstResponse?.contentDisposition == "attachment; filename=\"big.iso\"")
        #expect(attempt.firstResponse?.effectiveURL == "http://origin.example/big")
        #expect(attempt.transferID == nil && !attempt.mayUseRanges)
        #expect(attempt.connections == 4 && hostConnections == 4)
    }

    @Test(arguments: [(SegmentedAttemptsTests.mebibyte + 10, "\"v1\""), (SegmentedAttemptsTests.size, "W/\"weak\"")])
    func aSmallRestOrAWeakValidatorGoesOnOverOneConnection(size: Int64, validator: String) throws {
        var attempt = try attempt()
        #expect(hostConnections == 4)

        let next = queue.sync { segmented.goOn(afterFirstPart: &attempt, firstPart(of: size, validator: validator)) }

        #expect(next == .oneConnection)
        #expect(attempt.download.ranges.isEmpty && attempt.download.validator == validator)
        #expect(attempt.firstResponse == nil && attempt.transferID == nil && !attempt.mayUseRanges)
        #expect(attempt.connections == 1 && hostConnections == 1)
    }

    /// A single connection never goes on over ranges, however large the rest.
    @Test func aJobOfOneConnectionGoesOnOverIt() throws {
        var attempt = try attempt("one", connections: 1)
        let next = queue.sync { segmented.goOn(afterFirstPart: &attempt, firstPart()) }
        #expect(next == .oneConnection && attempt.download.ranges.isEmpty)
        #expect(attempt.connections == 1 && ledger.snapshot.runningByHost["origin.example:80"] == 1)
    }

    // MARK: - The first connection's progress

    /// A 200 for the first request: the origin sent the whole file, which comes over this one
    /// connection; the others go back to the host.
    @Test func aWholeResponseGivesBackTheConnectionsItWillNotUse() throws {
        var attempt = try attempt()
        // No size and no validator yet: nothing is clear.
        queue.sync { segmented.firstConnectionProgressed(&attempt, TransferProgress(bytesOnDisk: 0, bytesExpected: nil)) }
        #expect(attempt.mayUseRanges && hostConnections == 4)

        queue.sync { segmented.firstConnectionProgressed(&attempt, TransferProgress(bytesOnDisk: 1, bytesExpected: Self.size)) }
        #expect(!attempt.mayUseRanges && attempt.connections == 1 && hostConnections == 1)
    }

    /// A 206 for the first part: the connections stay for the ranges that may follow.
    @Test func aFirstPartKeepsTheConnections() throws {
        var attempt = try attempt()
        let part = TransferProgress(bytesOnDisk: 1, bytesExpected: Self.size, validator: "\"v1\"", isFirstPart: true)
        queue.sync { segmented.firstConnectionProgressed(&attempt, part) }
        #expect(!attempt.mayUseRanges && attempt.connections == 4 && hostConnections == 4)
    }

    // MARK: - Starting the ranges

    @Test func rangesStartFromTheirPartialFileEachAtItsShareOfTheRate() throws {
        var attempt = try planned { $0.maxBytesPerSecond = 4000 }

        #expect(start(&attempt))

        let segments = try #require(transfers.segments.first)
        #expect(transfers.segments.count == 1 && transfers.all.isEmpty)
        #expect(segments.size == Self.size && segments.validator == "\"v1\"" && segments.connections == 4)
        #expect(segments.ranges == attempt.download.ranges.map { ByteRange(start: $0.start, end: $0.end, next: $0.next) })
        #expect(segments.request.maxSpeedBytesPerSecond == 1000)
        #expect(segments.request.url == "http://origin.example/big")
        guard case .file(let path, _) = segments.request.sink else { Issue.record("not a file sink"); return }
        #expect(path == fixture.partials.path("big"))
        #expect(attempt.bytesAtStart == Self.mebibyte && attempt.isAttempting)
    }

    /// Ranges whose partial file is gone: the job is without partial data, to start over on one
    /// connection that may hand over to several again.
    @Test func rangesWithoutTheirPartialFileStartOver() throws {
        var attempt = try planned()
        fixture.partials.remove("big")

        #expect(!start(&attempt))

        #expect(transfers.segments.isEmpty)
        let fresh = attempt.download
        #expect(fresh.ranges.isEmpty && fresh.validator == nil && fresh.bytesReceived == 0)
        #expect(attempt.mayUseRanges && attempt.ranges == nil)
    }

    /// Resumed with every byte in but nothing that names the file into its directory: the last
    /// byte is fetched again for a response that does.
    @Test func aDirectoryDestinationWithEveryByteInFetchesItsLastByteAgain() throws {
        var attempt = try planned { $0.destination = Destination(stored: "files/") }
        attempt.firstResponse = nil
        attempt.download.ranges = attempt.download.ranges.map { RangeProgress(start: $0.start, end: $0.end, next: $0.end) }
        try fixture.writePartial("big", Array(repeating: 7, count: Int(Self.size)))

        #expect(start(&attempt))

        let ranges = try #require(transfers.segments.first).ranges
        #expect(ranges.dropLast().allSatisfy { $0.isDone })
        #expect(ranges.last?.next == Self.size - 1 && ranges.last?.end == Self.size)
    }

    // MARK: - Their progress

    @Test func rangesProgressIsSavedEveryQuarterSecond() throws {
        var attempt = try planned()
        #expect(start(&attempt))
        var advanced = try #require(transfers.segments.first).ranges
        advanced[1].next += 1000

        queue.sync { segmented.progressed(&attempt, SegmentedProgress(ranges: advanced)) }
        queue.sync {}
        #expect(attempt.download.ranges.map(\.next) == advanced.map(\.next))
        #expect(try fixture.job("big").ranges.isEmpty)

        fixture.clock.advance(by: .milliseconds(SegmentedAttempts.rangesPersistInterval))
        queue.sync { segmented.progressed(&attempt, SegmentedProgress(ranges: advanced)) }
        queue.sync {}  // the completer's turn
        let saved = try fixture.job("big")
        #expect(saved.ranges.map(\.next) == advanced.map(\.next))
        #expect(saved.bytesReceived == Self.mebibyte + 1000)
        #expect(saved.validator == "\"v1\"" && saved.bytesExpected == Self.size)
        #expect(attempt.persistedAt == fixture.clock.now)
    }

    // MARK: - Their end

    /// Every range in: one complete result, named as the first connection's response said.
    @Test func rangesThatAllCameInEndComplete() throws {
        var attempt = try planned()
        #expect(start(&attempt))
        let done = try #require(transfers.segments.first).ranges.map { ByteRange(start: $0.start, end: $0.end, next: $0.end) }

        let result = queue.sync {
            segmented.ended(&attempt, SegmentedResult(ranges: done, unfinished: [:], sha256: "digest", effectiveURL: "http://elsewhere/x"))
        }

        #expect(result.isComplete && result.sha256 == "digest" && result.httpStatus == 206)
        #expect(result.bytesOnDisk == Self.size && result.bytesThisAttempt == Self.size - Self.mebibyte)
        #expect(result.contentDisposition == "attachment; filename=\"big.iso\"" && result.effectiveURL == "http://origin.example/big")
        #expect(attempt.ranges == nil && attempt.download.ranges.allSatisfy { $0.next == $0.end })
    }

    /// A range that failed: the attempt ends with its failure, every range's progress kept.
    @Test func anUnfinishedRangeEndsTheAttemptWithItsFailureAndKeepsTheRest() throws {
        var attempt = try planned()
        #expect(start(&attempt))
        var ranges = try #require(transfers.segments.first).ranges
        ranges[1].next += 500
        let busy = TransferResult(httpStatus: 503, retryAfter: 30)

        let result = queue.sync { segmented.ended(&attempt, SegmentedResult(ranges: ranges, unfinished: [2: busy])) }

        #expect(result.httpStatus == 503 && result.retryAfter == 30 && result.sha256 == nil)
        #expect(result.bytesOnDisk == Self.mebibyte + 500 && result.validator == "\"v1\"")
        #expect(attempt.download.ranges.map(\.next) == ranges.map(\.next))
        #expect(fixture.partialExists("big"))
    }

    /// The origin would not serve ranges: the file came over one connection, whose result it is.
    @Test func anOriginThatSentTheWholeFileEndsWithThatOneConnection() throws {
        var attempt = try planned()
        #expect(start(&attempt))
        let whole = TransferResult(httpStatus: 200, bytesOnDisk: Self.size, bytesThisAttempt: Self.size, bytesExpected: Self.size,
                                   sha256: "whole")
        let ranges = try #require(transfers.segments.first).ranges

        let result = queue.sync {
            segmented.ended(&attempt, SegmentedResult(ranges: ranges, unfinished: [:], singleConnection: whole))
        }

        #expect(result.httpStatus == 200 && result.sha256 == "whole" && result.bytesOnDisk == Self.size)
        #expect(attempt.download.ranges.isEmpty && attempt.ranges == nil)
    }

    /// A range that came back as other bytes than asked for: nothing of the file is kept.
    @Test func aRangeOfOtherBytesLeavesNothingOfTheFile() throws {
        var attempt = try planned()
        #expect(start(&attempt))
        let ranges = try #require(transfers.segments.first).ranges

        let result = queue.sync {
            segmented.ended(&attempt, SegmentedResult(ranges: ranges, unfinished: [1: TransferResult(failure: .rangeMismatch("bytes 0-9/10"))]))
        }

        #expect(result.failure == .rangeMismatch("bytes 0-9/10") && result.bytesOnDisk == 0 && result.validator == nil)
        let fresh = attempt.download
        #expect(fresh.ranges.isEmpty && fresh.validator == nil && fresh.bytesReceived == 0)
        #expect(!fixture.partialExists("big"))
    }
}
