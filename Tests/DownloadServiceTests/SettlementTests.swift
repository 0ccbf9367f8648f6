import DownloadCore
@testable import DownloadService
import Persistence
import Testing
import Transfer

/// Every way an attempt ends, settled and committed to a real store: what a client then reads,
/// which webhooks are due, and what is left on disk.
@Suite struct SettlementTests {
    let body = Array("the whole file\n".utf8)

    /// A fresh store with job j1 running and `partial` in its partial file (whose digest it returns).
    func jobRunning(partial: [UInt8], expectedSHA256: String? = nil) throws -> (ServiceFixture, Download, digest: String) {
        let fixture = try ServiceFixture()
        try fixture.submit("j1", expectedSHA256: expectedSHA256)
        let job = try fixture.claim("j1")
        return (fixture, job, try fixture.writePartial("j1", partial))
    }

    /// Settles `result` for the job as it runs now, two seconds after its attempt started.
    func settlement(_ fixture: ServiceFixture, _ job: Download, _ result: TransferResult, jitter: Double = 0.5,
                    context: SettlementContext? = nil) -> Settlement {
        fixture.clock.advance(by: .seconds(2))
        return Settlement(context: context ?? fixture.settlementContext(), job: job, result: result,
                          startedAt: job.startedAt ?? 0, now: fixture.clock.now, jitter: jitter)
    }

    func finished(_ bytes: [UInt8], digest: String) -> TransferResult {
        TransferResult(httpStatus: 200, bytesOnDisk: Int64(bytes.count), bytesThisAttempt: Int64(bytes.count),
                       bytesExpected: Int64(bytes.count), sha256: digest, validator: "\"v1\"")
    }

    func outcomes(_ fixture: ServiceFixture, _ id: String) throws -> [String] {
        try fixture.store.attempts(of: id).map(\.outcome)
    }

    @Test func aCompletedTransferIsPlacedAndCommitted() throws {
        let (fixture, running, digest) = try jobRunning(partial: body)

        let write = settlement(fixture, running, finished(body, digest: digest)).settle()
        // Placed before the commit, and the partial file kept until the commit says the job is done.
        #expect(fixture.destinationBytes("files/j1") == body)
        #expect(fixture.partialExists("j1"))
        #expect(try fixture.commit(write) == [true])

        let done = try fixture.job("j1")
        #expect(done.state == .completed)
        #expect(done.sha256 == digest)
        #expect(done.bytesReceived == Int64(body.count))
        #expect(done.finishedAt == fixture.clock.now)
        #expect(done.error == nil)
        #expect(fixture.destinationBytes("files/j1") == body)
        #expect(!fixture.partialExists("j1"))
        #expect(try outcomes(fixture, "j1") == ["completed"])
        #expect(try fixture.webhooksDue() == ["download.completed"])
        #expect(fixture.published.withLock { $0.map(\.state) } == [.completed])
    }

    /// A 503 goes back to the queue after the retry policy's delay for the jitter given (never
    /// sooner than a Retry-After), keeping the bytes received for a resume.
    @Test(arguments: [(0.0, nil, 7_500), (0.5, nil, 10_000), (0.0, 120.0, 120_000)] as [(Double, Double?, Int64)])
    func aTransientFailureIsRetriedLater(jitter: Double, retryAfter: Double?, delay: Int64) throws {
        let (fixture, running, _) = try jobRunning(partial: Array(body.prefix(4)))

        let result = TransferResult(httpStatus: 503, bytesOnDisk: 4, bytesThisAttempt: 4, retryAfter: retryAfter)
        #expect(try fixture.commit(settlement(fixture, running, result, jitter: jitter).settle()).allSatisfy { $0 })
        // A Retry-After on a 503 holds the whole host:port, stored with the job's retry.
        let held = try fixture.store.hostBackoffs(after: fixture.clock.now)
        #expect(held == (retryAfter == nil ? [:] : [running.hostKey: fixture.clock.now + delay]))

        let queued = try fixture.job("j1")
        #expect(queued.state == .queued)
        #expect(queued.nextAttemptAt == fixture.clock.now + delay)
        #expect(queued.runAt == fixture.clock.now + delay)
        #expect(queued.error?.code == ErrorCode.httpStatus)
        #expect(queued.bytesReceived == 4)
        #expect(fixture.partialExists("j1"))
        let attempts = try fixture.store.attempts(of: "j1")
        #expect(attempts.map(\.outcome) == ["retry"])
        #expect(attempts.first?.httpStatus == 503)
        #expect(try fixture.webhooksDue() == [])
    }

    @Test func aPermanentFailureFailsTheJobAndDropsItsData() throws {
        let (fixture, running, _) = try jobRunning(partial: Array(body.prefix(4)))

        let result = TransferResult(httpStatus: 404, bytesOnDisk: 4)
        #expect(try fixture.commit(settlement(fixture, running, result).settle()) == [true])

        let failed = try fixture.job("j1")
        #expect(failed.state == .failed)
        #expect(failed.error == DownloadError(code: ErrorCode.httpStatus, message: "the origin answered 404"))
        #expect(failed.bytesReceived == 0)
        #expect(!fixture.partialExists("j1"))
        #expect(fixture.destinationBytes("files/j1") == nil)
        #expect(try outcomes(fixture, "j1") == ["failed"])
        #expect(try fixture.webhooksDue() == ["download.failed"])
    }

    @Test func aChecksumMismatchFailsWithoutPlacingTheFile() throws {
        let (fixture, running, digest) = try jobRunning(partial: body, expectedSHA256: String(repeating: "0", count: 64))

        #expect(try fixture.commit(settlement(fixture, running, finished(body, digest: digest)).settle()) == [true])

        let failed = try fixture.job("j1")
        #expect(failed.state == .failed)
        #expect(failed.error?.code == ErrorCode.checksumMismatch)
        #expect(fixture.destinationBytes("files/j1") == nil)
        #expect(!fixture.partialExists("j1"))
        #expect(try fixture.webhooksDue() == ["download.failed"])
    }

    /// The attempt a stop ended, as the engine reports it: cancelled, with what it wrote.
    func stoppedResult(bytes: Int64) -> TransferResult {
        TransferResult(failure: .cancelled, bytesOnDisk: bytes, bytesThisAttempt: bytes, bytesExpected: 100, validator: "\"v1\"")
    }

    /// A client's pause or cancel of the running job, as the API commits it.
    func clientMoves(_ fixture: ServiceFixture, _ running: Download, to state: DownloadState) throws {
        var changed = running
        changed.state = state
        changed.nextAttemptAt = nil
        if state.isTerminal { changed.finishedAt = fixture.clock.now }
        let events = state.isTerminal ? [fixture.events.terminal(changed, now: fixture.clock.now)] : []
        #expect(try fixture.store.update(changed, expecting: [.running], events: events))
    }

    @Test func aPausedTransferKeepsItsProgressAndData() throws {
        let (fixture, running, _) = try jobRunning(partial: Array(body.prefix(6)))
        try clientMoves(fixture, running, to: .paused)

        #expect(try fixture.commit(settlement(fixture, running, stoppedResult(bytes: 6)).stopped(.pause)) == [true, true])

        let paused = try fixture.job("j1")
        #expect(paused.state == .paused)
        #expect(paused.bytesReceived == 6)
        #expect(paused.bytesExpected == 100)
        #expect(paused.validator == "\"v1\"")
        #expect(fileSize(fixture.partials.path("j1")) == 6)
        #expect(try outcomes(fixture, "j1") == ["paused"])
        #expect(try fixture.webhooksDue() == [])
    }

    @Test func aCancelledTransferLosesItsData() throws {
        let (fixture, running, _) = try jobRunning(partial: Array(body.prefix(6)))
        try clientMoves(fixture, running, to: .cancelled)

        #expect(try fixture.commit(settlement(fixture, running, stoppedResult(bytes: 6)).stopped(.cancel)) == [true])

        #expect(try fixture.job("j1").state == .cancelled)
        #expect(!fixture.partialExists("j1"))
        #expect(try outcomes(fixture, "j1") == ["cancelled"])
        #expect(try fixture.webhooksDue() == ["download.cancelled"])
    }

    @Test func aTransferStoppedByShutdownGoesBackToTheQueue() throws {
        let (fixture, running, _) = try jobRunning(partial: Array(body.prefix(6)))

        #expect(try fixture.commit(settlement(fixture, running, stoppedResult(bytes: 6)).stopped(.shutdown)) == [true])

        let queued = try fixture.job("j1")
        #expect(queued.state == .queued)
        #expect(queued.runAt == fixture.clock.now)
        #expect(queued.bytesReceived == 6)
        #expect(queued.validator == "\"v1\"")
        #expect(queued.attempts == 1)
        #expect(fileSize(fixture.partials.path("j1")) == 6)
        #expect(try outcomes(fixture, "j1") == ["interrupted"])
        #expect(try fixture.webhooksDue() == [])
    }

    /// Attempts cut by fetchd's own stop do not use up the retry budget (3 attempts here): after
    /// two of them and a 503, a second 503 is still retried.
    @Test func attemptsAShutdownCutDoNotUseUpTheRetryBudget() throws {
        let fixture = try ServiceFixture()
        try fixture.submit("j1")
        let busy = TransferResult(httpStatus: 503, bytesOnDisk: 0, bytesThisAttempt: 0)
        for stops in [true, true, false, false] {
            let running = try fixture.claim("j1")
            let write = stops ? settlement(fixture, running, stoppedResult(bytes: 0)).stopped(.shutdown) : settlement(fixture, running, busy).settle()
            #expect(try fixture.commit(write).first == true)
            fixture.clock.advance(by: .seconds(3600))
        }

        #expect(try fixture.job("j1").state == .queued)
        #expect(try outcomes(fixture, "j1") == ["interrupted", "interrupted", "retry", "retry"])
    }

    struct ReadFailed: Error {}

    /// A completion whose commit finds that a client paused or cancelled the job meanwhile: the
    /// file is taken back out of the destination, and the partial data is removed only for a job
    /// known to be cancelled, never because reading the job's state failed.
    @Test(arguments: [(DownloadState.cancelled, false, false), (.cancelled, true, true), (.paused, false, true)])
    func aCompletionOvertakenByAClientKeepsDataUnlessSurelyCancelled(client: DownloadState, readFails: Bool, kept: Bool) throws {
        let (fixture, running, digest) = try jobRunning(partial: body)
        let context = readFails ? fixture.settlementContext(read: { _ in throw ReadFailed() }) : fixture.settlementContext()

        let write = settlement(fixture, running, finished(body, digest: digest), context: context).settle()
        try clientMoves(fixture, running, to: client)
        #expect(try fixture.commit(write) == [false])

        #expect(try fixture.job("j1").state == client)
        #expect(fixture.destinationBytes("files/j1") == nil)
        #expect(fixture.partialExists("j1") == kept)
        #expect(try outcomes(fixture, "j1") == [])
    }
}
