import DownloadCore
import Persistence
import TestSupport
import Testing

/// One turn of the scheduler (`applyAndClaim`), for every backend: the changes are applied as
/// `apply` applies them, and the pass that follows in the same transaction sees them.
@Suite struct TurnConformanceTests {
    /// A pass that starts every candidate it is offered, recording the ids.
    func claimingAll(now: Int64, offered: @escaping (String) -> Void = { _ in }) -> ClaimPass {
        ClaimPass(now: now, agedBefore: .min, agingDelay: 86_400_000,
                  candidates: { _ in (limit: 10, excludingHosts: []) },
                  choose: { offered($0.id); return $0.startingAttempt(now: now) })
    }

    @Test(arguments: StoreBackend.all) func aSettlementAndTheClaimForItsSlotCommitTogether(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        for id in ["01A", "01B"] { _ = try db.store.insert(makeDownload(id, session: "s", createdAt: id == "01A" ? 0 : 1), idempotency: nil) }
        let running = try #require(try db.store.download(id: "01A")).startingAttempt(now: 5)
        #expect(try db.claim(running, now: 5))
        var done = running
        done.state = .completed
        done.finishedAt = 10
        let event = WebhookEvent(id: "msg_1", type: "download.completed", payload: Array("{}".utf8), urls: ["http://a/"], session: "s")
        let turn = try db.store.applyAndClaim([.update(done, expecting: [.running], events: [event])], claimingAll(now: 10))
        #expect(turn.applied == [true])
        #expect(turn.claim.claimed.map(\.id) == ["01B"])
        #expect(try db.store.download(id: "01A")?.state == .completed)
        #expect(try db.store.download(id: "01B")?.state == .running)
        #expect(try db.store.dueDeliveries(now: 10, limit: 10, excluding: []).map(\.key) == ["msg_1 http://a/"])
    }

    /// A job the turn's changes put back in the queue, due now, is offered to the pass that follows them.
    @Test(arguments: StoreBackend.all) func thePassSeesWhatTheChangesDid(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        _ = try db.store.insert(makeDownload("01A"), idempotency: nil)
        let running = try #require(try db.store.download(id: "01A")).startingAttempt(now: 5)
        #expect(try db.claim(running, now: 5))
        var retried = running
        retried.state = .queued
        retried.runAt = 10
        var offered: [String] = []
        let turn = try db.store.applyAndClaim([.update(retried, expecting: [.running])], claimingAll(now: 10) { offered.append($0) })
        #expect(turn.applied == [true])
        #expect(offered == ["01A"])
        #expect(turn.claim.claimed.map(\.id) == ["01A"])
        #expect(try db.store.download(id: "01A")?.attempts == running.attempts + 1)
    }

    /// A compare-and-set that finds the job in another state says so; the pass still claims.
    @Test(arguments: StoreBackend.all) func aFailedCompareAndSetLeavesThePassToClaim(_ backend: StoreBackend) throws {
        let db = try backend.scratch()
        _ = try db.store.insert(makeDownload("01A"), idempotency: nil)
        var done = try #require(try db.store.download(id: "01A"))
        done.state = .completed
        let turn = try db.store.applyAndClaim([.update(done, expecting: [.running])], claimingAll(now: 10))
        #expect(turn.applied == [false])
        #expect(turn.claim.claimed.map(\.id) == ["01A"])
        #expect(try db.store.download(id: "01A")?.state == .running)
    }
}
