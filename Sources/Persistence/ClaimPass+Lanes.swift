import DownloadCore

extension ClaimPass {
    /// The walk every backend makes inside its claim transaction: lane by lane, the candidates the
    /// pass asks for, best first, each offered to `choose` until the pass `wantsMore` no longer
    /// (the backend reads no row after that). Returns the chosen jobs in order, and each chosen as
    /// it was read (`candidates`), by id: the backend claims the chosen together at the end, each as a compare-and-set
    /// writing only what `choose` changed. (A job is in one lane, so no later lane's candidates can
    /// hold one chosen before.)
    public func chooseLaneByLane(
        dueJobs: (_ lane: Lane, _ excludingHosts: [String], _ limit: Int, _ offer: (Download) -> Bool) throws -> Void
    ) rethrows -> (chosen: [Download], candidates: [String: Download]) {
        var chosen: [Download] = []
        var candidates: [String: Download] = [:]
        for lane in Lane.allCases {
            guard let (limit, excludingHosts) = self.candidates(lane) else { continue }
            try dueJobs(lane, excludingHosts, limit) { candidate in
                if let started = choose(candidate) {
                    candidates[candidate.id] = candidate
                    chosen.append(started)
                }
                return wantsMore()
            }
        }
        return (chosen, candidates)
    }
}
