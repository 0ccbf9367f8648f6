import DownloadCore

extension ClaimPass {
    /// The walk every backend makes inside its claim transaction: lane by lane, the candidates the
    /// pass asks for, best first, each offered to `choose`. Returns the chosen jobs in order, and
    /// every candidate as it was read, by id: the backend claims the chosen together at the end,
    /// each as a compare-and-set writing only what `choose` changed. (A job is in one lane, so no
    /// later lane's candidates can hold one chosen before.)
    public func chooseLaneByLane(
        dueJobs: (_ lane: Lane, _ excludingHosts: [String], _ limit: Int) throws -> [Download]
    ) rethrows -> (chosen: [Download], candidates: [String: Download]) {
        var chosen: [Download] = []
        var candidates: [String: Download] = [:]
        for lane in Lane.allCases {
            guard let (limit, excludingHosts) = self.candidates(lane) else { continue }
            for candidate in try dueJobs(lane, excludingHosts, limit) {
                candidates[candidate.id] = candidate
                if let started = choose(candidate) { chosen.append(started) }
            }
        }
        return (chosen, candidates)
    }
}
