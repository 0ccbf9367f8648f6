import DownloadCore
import Persistence

/// What one scheduling pass chooses, as the store asks it during its claim: how many candidates
/// to read and which hosts to leave out, then, for each candidate, whether it starts, with the
/// load as it grows during the pass. Lives for one pass, on the scheduler's queue.
final class PassChoices {
    private let now: Int64
    private let freeDisk: Int64?
    private let policy: SchedulingPolicy
    private let ledger: LoadLedger
    private let attempts: AttemptRunner
    private let earlyStart: EarlyStart
    /// What other nodes sharing the store run, by host, as the store reads it in the pass.
    private var elsewhere: [String: Int] = [:]
    /// The jobs chosen, each with its slot taken, and the partial data it starts from.
    private(set) var reserved: [(attempt: ActiveAttempt, partialBytes: Int64)] = []
    /// A candidate waits for disk space, which nothing signals: look again soon.
    private(set) var waitsForDisk = false

    init(now: Int64, freeDisk: Int64?, policy: SchedulingPolicy, ledger: LoadLedger, attempts: AttemptRunner, earlyStart: EarlyStart) {
        self.now = now
        self.freeDisk = freeDisk
        self.policy = policy
        self.ledger = ledger
        self.attempts = attempts
        self.earlyStart = earlyStart
    }

    func claimPass() -> ClaimPass {
        let capacity = policy.capacity
        var pass = ClaimPass(
            now: now, agedBefore: now - capacity.discretionaryMaxDelay.wholeMilliseconds,
            agingDelay: capacity.discretionaryMaxDelay.wholeMilliseconds,
            candidates: { _ in self.candidates() }, choose: { self.choose($0) })
        pass.otherNodesRunning = { self.elsewhere = $0 }
        pass.wantsMore = { self.hasFreeSlot }
        return pass
    }

    /// How many candidates to read (twice the free slots and some: many are skipped), and the
    /// hosts held back or at their limit here and on other nodes together.
    private func candidates() -> (limit: Int, excludingHosts: [String])? {
        let capacity = policy.capacity
        let free = capacity.maxTransfers - ledger.load.running
        guard free > 0 else { return nil }
        let byHost = ledger.load.runningByHost.merging(elsewhere, uniquingKeysWith: +)
        let fullHosts = byHost.filter { $0.value >= capacity.maxTransfersPerHost }.map(\.key)
        return (limit: free * 2 + 8, excludingHosts: Array(ledger.heldHosts.union(fullHosts)))
    }

    /// A transfer slot is free: the pass may start another job.
    private var hasFreeSlot: Bool { ledger.load.running < policy.capacity.maxTransfers }

    /// The job as it starts, with its slot taken (and, see `EarlyStart`, its transfer started), or
    /// nil to leave it queued.
    private func choose(_ candidate: Download) -> Download? {
        guard hasFreeSlot, !attempts.isActive(candidate.id) else { return nil }
        // A job that never started has no partial data to count (its first claim sets `startedAt`;
        // a watch's check that resets it removes the file): no look at the staging directory,
        // whose lock the transfers creating and removing their files there hold meanwhile.
        let partialBytes = candidate.startedAt == nil ? 0 : attempts.partials.size(candidate.id)
        var load = ledger.load
        load.runningByHost.merge(elsewhere, uniquingKeysWith: +)
        load.freeDiskBytes = freeDisk.map { $0 - ledger.load.reservedDiskBytes }
        switch policy.decide(candidate, now: now, load: load, partialBytes: partialBytes) {
        case .start:
            let job = candidate.startingAttempt(now: now)
            ledger.spaceHost(job.hostKey, now: now)
            let attempt = attempts.reserve(job, now: now, partialBytes: partialBytes,
                                           discretionary: policy.actsDiscretionary(job, now: now))
            reserved.append((attempt, partialBytes))
            if earlyStart.startsWhenChosen(job) { attempts.start(job, resumeFrom: partialBytes) }
            return job
        case .wait(.diskSpace):
            waitsForDisk = true
            return nil
        case .wait:
            return nil
        }
    }
}
