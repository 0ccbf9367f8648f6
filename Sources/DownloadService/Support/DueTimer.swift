import Dispatch

/// The one wake-up for "the next due thing" (job or webhook delivery): re-armed after every
/// scan, so nothing polls while idle. Used only on its queue.
final class DueTimer {
    private let queue: DispatchQueue
    private let leeway: DispatchTimeInterval
    private let fire: () -> Void
    private var source: DispatchSourceTimer?

    init(queue: DispatchQueue, leeway: DispatchTimeInterval, fire: @escaping () -> Void) {
        self.queue = queue
        self.leeway = leeway
        self.fire = fire
    }

    /// Fires once at `deadline` (milliseconds since the epoch, as `now`); nil disarms.
    func arm(at deadline: Int64?, now: Int64) {
        cancel()
        guard let deadline else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .milliseconds(Int(max(0, deadline - now))), leeway: leeway)
        timer.setEventHandler(handler: fire)
        timer.resume()
        source = timer
    }

    func cancel() {
        source?.cancel()
        source = nil
    }
}
