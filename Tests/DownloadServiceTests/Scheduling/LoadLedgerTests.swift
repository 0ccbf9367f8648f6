import Dispatch
import DownloadCore
@testable import DownloadService
import Testing

/// The load accounting the passes decide with and the API explains waits with: attempts counted
/// in and out by host, kind and disk space, connections, host holds and spacing.
@Suite struct LoadLedgerTests {
    let queue = DispatchQueue(label: "fetchd.test.ledger")
    let now: Int64 = 1_000_000

    func ledger(perHost: Int = 4, hostMinInterval: Duration = .zero) -> LoadLedger {
        LoadLedger(queue: queue, capacity: Capacity(maxTransfers: 8, maxTransfersPerHost: perHost, discretionaryMaxShare: 0.5,
                                                    discretionaryMaxDelay: .seconds(3600), discretionaryWindow: nil, diskReserve: 0,
                                                    hostMinInterval: hostMinInterval))
    }

    func job(_ id: String, host: String = "a.example", connections: Int = 1) throws -> Download {
        let url = "http://\(host)/\(id)"
        var submission = NewDownload(url: url, parsedURL: try HTTPURL.parse(url).get(), destination: Destination(stored: "files/\(id)"))
        submission.connections = connections
        return submission.makeDownload(id: id, now: now)
    }

    func attempt(_ job: Download, discretionary: Bool = false, remaining: Int64 = 0, connections: Int = 1) -> ActiveAttempt {
        var attempt = ActiveAttempt(download: job, transferID: nil, stopReason: nil, persistedAt: now, attemptStartedAt: now,
                                    discretionary: discretionary, remainingBytes: remaining)
        attempt.connections = connections
        return attempt
    }

    @Test func attemptsCountInAndOutByHostKindAndDiskSpace() throws {
        let ledger = ledger()
        let a = attempt(try job("a1"), remaining: 100, connections: 2)
        let d = attempt(try job("d1", host: "b.example"), discretionary: true, remaining: 50)
        queue.sync {
            ledger.track(a, starting: true)
            ledger.track(d, starting: true)
        }
        var load = ledger.snapshot
        #expect(load.running == 2)
        #expect(load.runningByHost == ["a.example:80": 2, "b.example:80": 1])
        #expect(load.runningDiscretionary == 1)
        #expect(load.reservedDiskBytes == 150)

        queue.sync { ledger.track(a, starting: false) }
        load = ledger.snapshot
        #expect(load.running == 1)
        #expect(load.runningByHost == ["b.example:80": 1])
        #expect(load.reservedDiskBytes == 50)
    }

    @Test func aJobGetsTheConnectionsItsHostHasLeftButAtLeastOne() throws {
        let ledger = ledger(perHost: 4)
        let (wide, elsewhere) = (try job("w", connections: 8), try job("o", host: "other.example", connections: 2))
        let (three, one) = (attempt(try job("x"), connections: 3), attempt(try job("y")))
        #expect(queue.sync { ledger.connectionsFree(for: wide) } == 4)
        queue.sync { ledger.track(three, starting: true) }
        #expect(queue.sync { ledger.connectionsFree(for: wide) } == 1)
        queue.sync { ledger.track(one, starting: true) }
        #expect(queue.sync { ledger.connectionsFree(for: wide) } == 1)
        #expect(queue.sync { ledger.connectionsFree(for: elsewhere) } == 2)
    }

    /// A first connection that stays alone gives back the connections it held for ranges.
    @Test func anAttemptGivesBackConnections() throws {
        let ledger = ledger()
        var wide = attempt(try job("w", connections: 4), connections: 4)
        queue.sync {
            ledger.track(wide, starting: true)
            ledger.setConnections(&wide, 1)
        }
        #expect(wide.connections == 1)
        #expect(ledger.snapshot.runningByHost == ["a.example:80": 1])
        queue.sync { ledger.track(wide, starting: false) }
        #expect(ledger.snapshot.runningByHost.isEmpty)
    }

    @Test func aHostHoldKeepsItsLatestTime() {
        let ledger = ledger()
        queue.sync {
            ledger.holdHost("a.example:80", until: now + 5000)
            ledger.holdHost("a.example:80", until: now + 1000)
            ledger.holdHost("b.example:80", until: now + 2000)
        }
        #expect(ledger.snapshot.hostBackoffs == ["a.example:80": now + 5000, "b.example:80": now + 2000])
        #expect(queue.sync { ledger.heldHosts } == ["a.example:80", "b.example:80"])
        #expect(queue.sync { ledger.nextHoldEnd } == now + 2000)
    }

    @Test func spacingHoldsAHostOnlyWhenAnIntervalIsSet() {
        let unspaced = ledger()
        queue.sync { unspaced.spaceHost("a.example:80", now: now) }
        #expect(queue.sync { unspaced.heldHosts }.isEmpty)

        let spaced = ledger(hostMinInterval: .milliseconds(250))
        queue.sync { spaced.spaceHost("a.example:80", now: now) }
        #expect(spaced.snapshot.hostSpacing == ["a.example:80": now + 250])
        #expect(queue.sync { spaced.heldHosts } == ["a.example:80"])
        #expect(queue.sync { spaced.nextHoldEnd } == now + 250)
    }

    /// The store's holds are read once; holds and spacings that have passed are dropped.
    @Test func storedHoldsAreRestoredOnceAndPastOnesForgotten() throws {
        let ledger = ledger(hostMinInterval: .milliseconds(100))
        var reads = 0
        try queue.sync {
            ledger.spaceHost("s.example:80", now: now)
            try ledger.forgetPastHolds(now: now) {
                reads += 1
                return ["a.example:80": now + 1000, "b.example:80": now + 50]
            }
            try ledger.forgetPastHolds(now: now + 100) {
                reads += 1
                return ["c.example:80": now + 9000]
            }
        }
        #expect(reads == 1)
        #expect(ledger.snapshot.hostBackoffs == ["a.example:80": now + 1000])
        #expect(ledger.snapshot.hostSpacing.isEmpty)
    }

    /// A store that cannot be read then is asked again at the next pass.
    @Test func holdsThatCouldNotBeReadAreReadAtTheNextPass() throws {
        struct Unreadable: Error {}
        let ledger = ledger()
        #expect(throws: Unreadable.self) {
            try queue.sync { try ledger.forgetPastHolds(now: now) { throw Unreadable() } }
        }
        try queue.sync { try ledger.forgetPastHolds(now: now) { ["a.example:80": now + 1000] } }
        #expect(ledger.snapshot.hostBackoffs == ["a.example:80": now + 1000])
    }
}
