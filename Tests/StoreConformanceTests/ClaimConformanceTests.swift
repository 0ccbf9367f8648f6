import DownloadCore
import Dispatch
import Persistence
import Synchronization
import TestSupport
import Testing

/// The claim step's order and its exclusivity, for every backend: the scheduler's rules (priority,
/// session fairness, per-host limits, the discretionary lane) depend on what a pass is offered.
@Suite struct ClaimConformanceTests {
    func insert(_ db: ScratchStore, _ jobs: [Download]) throws {
        for job in jobs { _ = try db.store.insert(job, idempotency: nil) }
    }

    func job(_ id: String, host: String = "example.com:80", priority: Double = 0.5, session: String = "default",
             discretionarySize: Int64?? = nil, createdAt: Int64 = 0) -> Download {
        var job = makeDownload(id, session: session, priority: priority, createdAt: createdAt)
        job.hostKey = host
        if let size = discretionarySize {
            job.discretionary = true
            job.expectedBytesToReceive = size
        }
        return job
    }

    /// A pass claiming every candidate it is offered; the next queue change it reports.
    func claimAll(_ store: any JobStore, now: Int64, limit: Int = 1000, agingDelay: Int64 = 86_400_000) throws -> ClaimResult {
        try store.claim(ClaimPass(now: now, agedBefore: .min, agingDelay: agingDelay,
                                  candidates: { _ in (limit: limit, excludingHosts: []) },
                                  choose: { var started = $0; started.state = .running; return started }))
    }

    @Test(arguments: StoreBackend.all) func dueJobsComeByPriorityThenAge(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        var later = job("01D", priority: 1.0)
        later.runAt = 5000
        try insert(db, [job("01A", priority: 0.1), job("01B", priority: 0.9), job("01C", priority: 0.9), later])
        #expect(try db.candidates(now: 1000) == ["01B", "01C", "01A"])
        #expect(try claimAll(db.store, now: 1000, limit: 0).nextQueueChange == 5000)
        #expect(try db.candidates(now: 5000, limit: 1) == ["01D"])
    }

    /// Jobs of full hosts fill more of the lane's top than a pass reads: the other hosts' best come instead, in order.
    @Test(arguments: StoreBackend.all) func fullHostsAreLeftOutWithoutHidingOtherHosts(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        try insert(db, (0..<50).map { job(String(format: "01A%02d", $0), priority: 0.9) })
        try insert(db, [job("01B0", host: "b.example:80", priority: 0.2), job("01B1", host: "b.example:80", priority: 0.3),
                        job("01C0", host: "c.example:80", priority: 0.25), job("01D0", host: "d.example:80", priority: 0.1)])
        #expect(try db.candidates(now: 0, limit: 3, excludingHosts: ["example.com:80"]) == ["01B1", "01C0", "01B0"])
        #expect(try db.candidates(now: 0, limit: 3, excludingHosts: ["example.com:80", "b.example:80"]) == ["01C0", "01D0"])
        #expect(try db.candidates(now: 0, limit: 2, lanes: [.normal]) == ["01A00", "01A01"])
    }

    /// Discretionary jobs: unknown sizes, then smallest first, until they have waited their maximum delay.
    @Test(arguments: StoreBackend.all) func discretionaryJobsHaveTheirOwnLaneUntilTheyAge(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        try insert(db, [job("01D1", discretionarySize: 900, createdAt: 0), job("01D2", discretionarySize: 100, createdAt: 50),
                        job("01D3", discretionarySize: 500, createdAt: 100), job("01D4", discretionarySize: .some(nil), createdAt: 150)])
        #expect(try db.candidates(now: 200, lanes: [.normal]).isEmpty)
        #expect(try db.candidates(now: 200, lanes: [.discretionary]) == ["01D4", "01D2", "01D3", "01D1"])
        #expect(try claimAll(db.store, now: 200, limit: 0, agingDelay: 1000).nextQueueChange == 1000)
        #expect(try db.candidates(now: 1000, agedBefore: 0, lanes: [.normal]) == ["01D1"])
    }

    @Test(arguments: StoreBackend.all) func sessionsAreInterleavedFairly(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        try insert(db, (0..<20).map { job(String(format: "01A%02d", $0), session: "big") } + [job("01B", session: "small")])
        #expect(try db.candidates(now: 0, limit: 3) == ["01A00", "01B", "01A01"])
    }

    @Test(arguments: StoreBackend.all) func aSessionArrivingLaterStartsAfterWhatAlreadyRan(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        try insert(db, (0..<10).map { job("01A\($0)", session: "early") })
        #expect(try claimAll(db.store, now: 0, limit: 5).claimed.count == 5)
        try insert(db, [job("01B", session: "late")])
        // The late session's job follows the jobs already started, ahead of the early session's backlog.
        #expect(try db.candidates(now: 0, limit: 2) == ["01A5", "01B"])
    }

    @Test(arguments: StoreBackend.all) func aClaimIsACompareAndSetOnQueued(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        var job = job("01A")
        try insert(db, [job])
        job.state = .running
        #expect(try db.claim(job))
        #expect(try db.claim(job) == false)
    }

    /// Two stores over the same data (two nodes) claiming at once: every job is claimed exactly once.
    @Test(arguments: StoreBackend.all) func concurrentClaimersNeverShareAJob(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        let ids = (0..<120).map { String(format: "01A%03d", $0) }
        try insert(db, ids.map { job($0, host: "h\(Int($0.suffix(1)) ?? 0).example:80") })
        let stores = [db.store, try db.another()]
        let claimed = Mutex<[String]>([])
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            do {
                while true {
                    let batch = try claimAll(stores[worker % 2], now: 0, limit: 7).claimed.map(\.id)
                    if batch.isEmpty { return }
                    claimed.withLock { $0 += batch }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(claimed.withLock { $0 }.sorted() == ids)
    }

    /// Two nodes finishing a session's last two jobs at once: the session is announced exactly once.
    @Test(arguments: StoreBackend.all) func aSessionFinishedByTwoNodesAtOnceIsAnnouncedOnce(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        let stores = [db.store, try db.another()]
        let rounds = 15
        for round in 0..<rounds {
            try insert(db, [job("01S\(round)a", session: "s\(round)"), job("01S\(round)b", session: "s\(round)")])
        }
        #expect(try claimAll(db.store, now: 0).claimed.count == 2 * rounds)
        let failures = Mutex<[String]>([])
        for round in 0..<rounds {
            let running = try ["a", "b"].map { try #require(try db.store.download(id: "01S\(round)\($0)")) }
            DispatchQueue.concurrentPerform(iterations: 2) { node in
                var done = running[node]
                done.state = .completed
                done.finishedAt = 10
                do {
                    _ = try stores[node].update(done, expecting: [.running]) { snapshot in
                        [WebhookEvent(id: "msg_\(round)_\(node)", type: "session.finished", payload: [], urls: ["http://a/"],
                                      session: snapshot.session)]
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let finished = try db.store.dueDeliveries(now: 10, limit: 1000, excluding: []).filter { $0.type == "session.finished" }
        #expect(finished.count == rounds)
    }

    /// A job of a batch that is not created (its destination is busy) takes no turn of its session:
    /// the session's next job comes where it would have without it.
    @Test(arguments: StoreBackend.all) func aJobLeftOutOfABatchTakesNoTurnOfItsSession(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        _ = try db.store.insert(makeDownload("01X", destination: "taken", session: "other"), idempotency: nil)
        let batch = [makeDownload("01A0", session: "big"), makeDownload("01A1", destination: "taken", session: "big"),
                     makeDownload("01A2", session: "big")]
        let outcomes = try db.store.insert(batch.map { NewJob(download: $0, idempotency: nil) })
        #expect(outcomes == [.created, .destinationBusy, .created])
        _ = try db.store.insert([makeDownload("01B0", session: "small"), makeDownload("01B1", session: "small")]
            .map { NewJob(download: $0, idempotency: nil) })
        #expect(try db.candidates(now: 0, limit: 5) == ["01A0", "01B0", "01X", "01A2", "01B1"])
    }
}
