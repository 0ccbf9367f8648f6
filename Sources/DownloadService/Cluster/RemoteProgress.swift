import Synchronization

/// The progress of jobs other nodes run, for `GET /events` on this one. ClusterEventRelay reads
/// it from the store only while a stream follows (`isFollowed`); when the last stream ends it is
/// dropped, so the next stream never starts from a stale count.
final class RemoteProgress: Sendable {
    private struct State {
        var followers = 0
        var progress: [String: LiveProgress] = [:]
    }

    private let state = Mutex(State())

    func follow() {
        state.withLock { $0.followers += 1 }
    }

    func unfollow() {
        state.withLock { state in
            state.followers -= 1
            if state.followers == 0 { state.progress = [:] }
        }
    }

    var isFollowed: Bool {
        state.withLock { $0.followers > 0 }
    }

    /// Every job running elsewhere, as just read; kept only while a stream follows (the last one
    /// may have ended during the read).
    func replace(with progress: [String: LiveProgress]) {
        state.withLock { state in
            if state.followers > 0 { state.progress = progress }
        }
    }

    var current: [String: LiveProgress] {
        state.withLock { $0.progress }
    }
}
