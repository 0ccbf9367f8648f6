import DownloadCore
import Persistence

/// One process owns the data directory (its lock), so it is the only node: no leases to keep or
/// take over, and a job runs here exactly while it is `running`.
extension SQLiteStore {
    public func liveNodes() throws -> [NodeRecord]? { nil }

    public func renewLease() throws -> Bool { true }

    public func takeOverAbandonedJobs() throws -> [Download] { [] }

    public func jobsNotRunningHere(_ ids: [String]) throws -> [String: DownloadState] {
        var states: [String: DownloadState] = [:]
        for id in ids {
            if let state = try download(id: id)?.state, state != .running { states[id] = state }
        }
        return states
    }

    public func runningElsewhere() throws -> [RunningProgress] { [] }

    public func watchForWork(_ wake: @escaping @Sendable () -> Void) {}
}
