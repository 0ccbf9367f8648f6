/// Which running jobs get a progress event now: those whose bytes moved since their last event,
/// once `interval` has passed since it. Progress is looked at more often than a client wants it
/// (`GET /events` at every poll, a segmented job's saved count four times a second), so each
/// job's events come at a steady pace with its newest count.
struct ProgressThrottle {
    /// A job's last event.
    struct Sent: Equatable {
        var bytes: Int64
        var at: ContinuousClock.Instant
    }

    struct Due: Equatable {
        var id: String
        var progress: LiveProgress
        /// The job's event before this one; nil for its first.
        var previous: Sent?
    }

    let interval: Duration
    private var sent: [String: Sent] = [:]

    init(interval: Duration) {
        self.interval = interval
    }

    /// The jobs of `progress` due for an event at `now`, by id; what it knew of jobs no longer
    /// among them (they stopped running here or elsewhere) is forgotten.
    mutating func due(_ progress: [String: LiveProgress], now: ContinuousClock.Instant) -> [Due] {
        var kept: [String: Sent] = [:]
        var due: [Due] = []
        for (id, job) in progress.sorted(by: { $0.key < $1.key }) {
            let previous = sent[id]
            if let previous, previous.bytes == job.bytesReceived || previous.at.duration(to: now) < interval {
                kept[id] = previous
            } else {
                kept[id] = Sent(bytes: job.bytesReceived, at: now)
                due.append(Due(id: id, progress: job, previous: previous))
            }
        }
        sent = kept
        return due
    }
}
