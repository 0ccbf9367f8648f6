import Foundation
import Logging
import Synchronization
import Testing
@testable import Transfer

/// The engine's bandwidth budget: a cap on all transfers together, a transfer's own cap within
/// it, and caps that change while transfers run. The bounds asserted are correctness bounds (no
/// transfer can beat its cap), not speed targets.
@Suite struct BandwidthTests {
    @Test func threeTransfersUnderAnEngineCapTakeAtLeastTheirSizeOverTheCap() async throws {
        let bodies = (0..<3).map { _ in randomBytes(600_000) }
        let origin = try TestOrigin { request in
            .resource(bodies[Int(request.path.dropFirst()) ?? 0], etag: "\"v\"", for: request)
        }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }
        let cap: Int64 = 1 << 20
        engine.setBandwidthLimit(bytesPerSecond: cap)

        let (results, seconds) = await measure {
            await withTaskGroup(of: (Int, TransferResult).self) { group in
                for index in bodies.indices {
                    group.addTask { (index, await engine.run(download(origin.url("/\(index)"), to: directory.file("\(index)")))) }
                }
                return await group.reduce(into: [Int: TransferResult]()) { $0[$1.0] = $1.1 }
            }
        }

        for index in bodies.indices {
            #expect(results[index]?.failure == nil)
            #expect(results[index]?.sha256 == sha256Hex(bodies[index]))
            #expect(contents(directory.file("\(index)")) == bodies[index])
        }
        let total = Double(bodies.map(\.count).reduce(0, +))
        #expect(seconds >= total / Double(cap), "3 × 600 kB in \(seconds) s under 1 MiB/s")
    }

    @Test func aTransfersOwnCapHoldsItAloneBesideAnUncappedOne() async throws {
        let slow = randomBytes(300_000)
        let fast = randomBytes(4 << 20)
        let origin = try TestOrigin { request in
            .resource(request.path == "/slow" ? slow : fast, etag: "\"v\"", for: request)
        }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }
        let cap: Int64 = 256 * 1024

        var capped = download(origin.url("/slow"), to: directory.file("slow"))
        capped.maxSpeedBytesPerSecond = cap
        let finishedFirst = Mutex<String?>(nil)
        async let slowRun = measure {
            let result = await engine.run(capped)
            finishedFirst.withLock { $0 = $0 ?? "slow" }
            return result
        }
        let fastResult = await engine.run(download(origin.url("/fast"), to: directory.file("fast")))
        finishedFirst.withLock { $0 = $0 ?? "fast" }
        let (slowResult, seconds) = await slowRun

        #expect(fastResult.sha256 == sha256Hex(fast))
        #expect(slowResult.sha256 == sha256Hex(slow))
        #expect(seconds >= Double(slow.count) / Double(cap))
        #expect(finishedFirst.withLock { $0 } == "fast", "the uncapped transfer is not held to the other's cap")
    }

    @Test func liftingTheCapLetsARunningTransferFinish() async throws {
        let body = randomBytes(8 << 20)
        let origin = try TestOrigin { .resource(body, etag: "\"v\"", for: $0) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }
        // At this rate the file would take over two minutes.
        engine.setBandwidthLimit(bytesPerSecond: 64 * 1024)

        let lifted = Atomic<Bool>(false)
        let result = await engine.run(download(origin.url("/f"), to: directory.file("f"))) { progress in
            guard progress.bytesOnDisk > 0, !lifted.exchange(true, ordering: .relaxed) else { return }
            engine.setBandwidthLimit(bytesPerSecond: nil)
        }

        let wasLifted = lifted.load(ordering: .relaxed)
        #expect(wasLifted)
        #expect(result.failure == nil)
        #expect(result.sha256 == sha256Hex(body))
    }

    @Test func aCapAndASlowWriterTogetherLoseNothing() async throws {
        // A backlog of one chunk pauses the transfer for its writer over and over, while the cap
        // pauses it for bandwidth: each pause must be lifted only by what caused it, or by both.
        let body = randomBytes(3 << 20)
        let origin = try TestOrigin { .resource(body, etag: "\"v\"", for: $0) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = TransferEngine(logger: Logger(label: "transfer-tests"), staging: WriteStaging(backlogLimit: 1))
        defer { engine.shutdown() }
        engine.setBandwidthLimit(bytesPerSecond: 4 << 20)

        let result = await engine.run(download(origin.url("/f"), to: directory.file("f")))

        #expect(result.failure == nil)
        #expect(result.sha256 == sha256Hex(body))
        #expect(sha256Hex(contents(directory.file("f"))) == sha256Hex(body))
    }

    @Test func theBudgetIsDividedEvenlyAndWhatOneLeavesGoesToTheOthers() {
        let unlimited = Int64.max
        // Three that want everything: even thirds.
        #expect(BandwidthShares.divide(300, wants: [unlimited, unlimited, unlimited], ceilings: [unlimited, unlimited, unlimited])
            == [100, 100, 100])
        // One wants 10: the other two split the rest.
        #expect(BandwidthShares.divide(300, wants: [10, unlimited, unlimited], ceilings: [unlimited, unlimited, unlimited])
            == [10, 145, 145])
        // One is held to its own cap of 50: the rest goes to the other.
        #expect(BandwidthShares.divide(300, wants: [50, unlimited], ceilings: [50, unlimited]) == [50, 250])
        // Nobody wants it all: what is left is spread, up to each one's ceiling.
        #expect(BandwidthShares.divide(300, wants: [10, 20], ceilings: [15, unlimited]) == [15, 155])
        #expect(BandwidthShares.divide(300, wants: [], ceilings: []) == [])
    }

    @Test func anUploadsReadIsCutToItsAllowanceButNotBelowTheMinimum() {
        let throttle = TransferThrottle(ownLimit: nil)
        #expect(throttle.grant(upTo: 1 << 20, minimum: 16 << 10) == 1 << 20)  // not metered: all of it
        throttle.isMetered = true
        throttle.refill(40 << 10)
        #expect(throttle.grant(upTo: 1 << 20, minimum: 16 << 10) == 40 << 10)
        #expect(throttle.grant(upTo: 1 << 20, minimum: 16 << 10) == 0)  // held back until 16 KiB are there
        throttle.refill(10 << 10)
        #expect(!throttle.release())
        throttle.refill(10 << 10)
        #expect(throttle.release())
        #expect(throttle.grant(upTo: 8 << 10, minimum: 16 << 10) == 8 << 10)  // a short read needs only itself
    }
}
