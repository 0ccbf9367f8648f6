import DownloadCore

extension ClaimPass {
    /// The walk every backend makes inside its claim transaction: lane by lane, the candidates the
    /// pass asks for, best first, each offered to `choose`, and the chosen claimed (a claim that
    /// finds the job changed returns false and is left out). The claimed jobs, as stored.
    public func claimLaneByLane(
        dueJobs: (_ lane: Lane, _ excludingHosts: [String], _ limit: Int) throws -> [Download],
        claim: (Download) throws -> Bool
    ) rethrows -> [Download] {
        var claimed: [Download] = []
        for lane in Lane.allCases {
            guard let (limit, excludingHosts) = candidates(lane) else { continue }
            for candidate in try dueJobs(lane, excludingHosts, limit) {
                if let started = choose(candidate), try claim(started) { claimed.append(started) }
            }
        }
        return claimed
    }
}
