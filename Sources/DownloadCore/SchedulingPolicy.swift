/// The limits the scheduler works within.
public struct Capacity: Sendable {
    public var maxTransfers: Int
    public var maxTransfersPerHost: Int
    public var discretionaryMaxShare: Double
    /// How long after creation a discretionary job starts running like a normal one.
    public var discretionaryMaxDelay: Duration
    public var discretionaryWindow: DailyWindow?
    /// Free space kept under the download root.
    public var diskReserve: Int64
    /// The least time between two request starts to one host:port.
    public var hostMinInterval: Duration

    public init(maxTransfers: Int, maxTransfersPerHost: Int, discretionaryMaxShare: Double, discretionaryMaxDelay: Duration,
                discretionaryWindow: DailyWindow?, diskReserve: Int64, hostMinInterval: Duration = .zero) {
        self.maxTransfers = maxTransfers
        self.maxTransfersPerHost = maxTransfersPerHost
        self.discretionaryMaxShare = discretionaryMaxShare
        self.discretionaryMaxDelay = discretionaryMaxDelay
        self.discretionaryWindow = discretionaryWindow
        self.diskReserve = diskReserve
        self.hostMinInterval = hostMinInterval
    }

    /// How many slots discretionary jobs may hold: the share of all slots, but at least one.
    public var discretionarySlots: Int { max(1, Int(Double(maxTransfers) * discretionaryMaxShare)) }
}

/// What is running now, as the scheduler sees it.
public struct Load: Sendable {
    public var running = 0
    public var runningByHost: [String: Int] = [:]
    public var runningDiscretionary = 0
    /// Free bytes under the download root, less what running transfers still need; nil if unknown.
    public var freeDiskBytes: Int64?
    /// What running transfers still expect to write.
    public var reservedDiskBytes: Int64 = 0
    /// Hosts (host:port) that asked every client to wait, and until when.
    public var hostBackoffs: [String: Int64] = [:]
    /// Hosts whose next request may not start before this (`hostMinInterval` after the last).
    public var hostSpacing: [String: Int64] = [:]

    public init(running: Int = 0, runningByHost: [String: Int] = [:], runningDiscretionary: Int = 0, freeDiskBytes: Int64? = nil) {
        self.running = running
        self.runningByHost = runningByHost
        self.runningDiscretionary = runningDiscretionary
        self.freeDiskBytes = freeDiskBytes
    }
}

/// Whether a queued job may start now, and if not, why: the one rule behind both the scheduler's
/// choices and the `waitingFor` the API shows. Pure: time, load and disk space come in as values.
public struct SchedulingPolicy: Sendable {
    public var capacity: Capacity

    public init(capacity: Capacity) {
        self.capacity = capacity
    }

    public enum Decision: Sendable, Equatable {
        case start
        case wait(WaitingFor)
    }

    /// `partialBytes` is what the job already has on disk (a resume needs only the rest).
    /// Free space beyond the reserve that a job whose disk filled needs before it tries again.
    public static let roomToResume: Int64 = 1 << 20

    public func decide(_ job: Download, now: Int64, load: Load, partialBytes: Int64 = 0) -> Decision {
        if job.runAt > now {
            if let next = job.nextAttemptAt, next > now { return .wait(.retry) }
            return .wait(.earliestBeginDate)
        }
        if let until = load.hostBackoffs[job.hostKey], until > now { return .wait(.hostBackoff) }
        if load.running >= capacity.maxTransfers { return .wait(.slot) }
        if load.runningByHost[job.hostKey, default: 0] >= capacity.maxTransfersPerHost { return .wait(.hostLimit) }
        if let next = load.hostSpacing[job.hostKey], next > now { return .wait(.hostLimit) }
        if actsDiscretionary(job, now: now) {
            if let window = capacity.discretionaryWindow, !window.contains(now) { return .wait(.discretionary) }
            if load.runningDiscretionary >= capacity.discretionarySlots { return .wait(.discretionary) }
        }
        if let free = load.freeDiskBytes, let size = job.bytesExpected, size - partialBytes > free - capacity.diskReserve {
            return .wait(.diskSpace)
        }
        // Its disk filled during a transfer, whatever size it expected: it waits for room again.
        if job.diskFullSince != nil, let free = load.freeDiskBytes, free - capacity.diskReserve < Self.roomToResume {
            return .wait(.diskSpace)
        }
        return .start
    }

    /// A discretionary job that has waited `discretionaryMaxDelay` runs like a normal one.
    public func actsDiscretionary(_ job: Download, now: Int64) -> Bool {
        job.discretionary && now - job.createdAt < capacity.discretionaryMaxDelay.wholeMilliseconds
    }

    /// When the discretionary window next opens, if it is closed at `now`.
    public func nextWindowOpening(after now: Int64) -> Int64? {
        guard let window = capacity.discretionaryWindow, !window.contains(now) else { return nil }
        return window.nextOpening(after: now)
    }
}

/// Start-time fair queueing between sessions: a job's tag is one past the later of its session's
/// last tag and the virtual time (the tag of the latest job started). Ordering the queue by tag
/// interleaves sessions, so a session with 10,000 queued jobs cannot starve one with a single job,
/// and within a session jobs keep their order.
public enum FairQueue {
    public static func tag(sessionLastTag: Int64, virtualTime: Int64) -> Int64 {
        max(sessionLastTag, virtualTime) + 1
    }
}
