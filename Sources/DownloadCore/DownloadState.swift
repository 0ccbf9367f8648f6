/// The life cycle of a download job. The last three states are terminal: once there, a job never
/// changes again, except that a client may retry a failed one (it goes back to `queued`).
public enum DownloadState: String, Sendable, CaseIterable, Codable {
    case queued, running, paused, completed, failed, cancelled

    public var isTerminal: Bool {
        switch self {
        case .completed, .failed, .cancelled: return true
        case .queued, .running, .paused: return false
        }
    }

    public static let nonTerminal: [DownloadState] = allCases.filter { !$0.isTerminal }

    /// The transitions the service may make; the store enforces the expected source state with compare-and-set.
    public func canTransition(to next: DownloadState) -> Bool {
        switch (self, next) {
        case (.queued, .running), (.queued, .paused), (.queued, .cancelled), (.queued, .failed),
             (.running, .queued), (.running, .paused), (.running, .completed), (.running, .failed), (.running, .cancelled),
             (.paused, .queued), (.paused, .cancelled), (.failed, .queued):
            return true
        default:
            return false
        }
    }
}

/// Why a queued job is not running yet.
public enum WaitingFor: String, Sendable, CaseIterable {
    case earliestBeginDate, slot, hostLimit, discretionary, retry, diskSpace
    /// The origin's host:port asked every client to wait (429 or 503 with Retry-After).
    case hostBackoff
    /// The origin refused an expired link of a job with URL refresh: it waits for a new `url`.
    case url
}
