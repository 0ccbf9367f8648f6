import Confinement
import Dispatch

/// curl's timeout (CURLMOPT_TIMERFUNCTION) on one DispatchSourceTimer, re-armed only when curl
/// wants it sooner than it is set to fire.
///
/// Why: curl moves its timeout on nearly every call during a transfer (the low-speed check is due
/// a second after the latest read), and every `schedule` of a dispatch timer wakes libdispatch's
/// manager thread, so re-arming each time cost two thread switches per socket read (per 16 KiB
/// record over TLS). Instead a timeout that moved later is only noted; when the timer fires
/// early it re-arms itself for the noted time, once.
/// Used only on the queue the timer runs on.
final class CurlTimer: QueueConfined, @unchecked Sendable {  // every property only on `queue` (assertOnQueue)
    private let timer: DispatchSourceTimer
    let queue: DispatchQueue
    private let onDue: () -> Void
    /// A call for a timeout of 0 is queued (`set`).
    private var callQueued = false
    /// When curl wants to be called, in uptime nanoseconds; nil: curl wants no call.
    private var due: UInt64?
    /// When the dispatch timer fires; nil: it is parked.
    private var armedFor: UInt64?
    private static let leeway = DispatchTimeInterval.milliseconds(1)
    /// A timer that fires this close to the due time calls curl rather than re-arming.
    private static let slack: UInt64 = 1_000_000

    /// `onDue` runs on `queue` when curl's timeout is up.
    init(queue: DispatchQueue, onDue: @escaping () -> Void) {
        self.queue = queue
        self.onDue = onDue
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            armedFor = nil
            guard let due else { return }
            if due > DispatchTime.now().uptimeNanoseconds + Self.slack {
                arm(for: due)
                return
            }
            callIfDue()
        }
        timer.schedule(deadline: .distantFuture)
        timer.resume()
    }

    /// CURLMOPT_TIMERFUNCTION: -1 cancels the timeout, anything else sets it that many milliseconds
    /// from now. curl must not be called from inside its callbacks, so 0 (every new transfer asks
    /// for it) is a call queued behind the current one: the dispatch timer would wake the manager
    /// thread twice for it. A cancelled timeout leaves the timer set: it fires once more and finds
    /// nothing due.
    func set(milliseconds: Int) {
        assertOnQueue()
        guard milliseconds >= 0 else {
            due = nil
            return
        }
        let when = DispatchTime.now().uptimeNanoseconds + UInt64(milliseconds) * 1_000_000
        due = when
        guard milliseconds > 0 else {
            guard !callQueued else { return }
            callQueued = true
            return queue.async { [weak self] in
                guard let self else { return }
                callQueued = false
                callIfDue()
            }
        }
        if let armedFor, armedFor <= when { return }
        arm(for: when)
    }

    /// Calls curl if its timeout is up (it may have been moved since the call was planned).
    private func callIfDue() {
        guard let due, due <= DispatchTime.now().uptimeNanoseconds + Self.slack else { return }
        self.due = nil
        onDue()
    }

    func cancel() {
        timer.cancel()
    }

    private func arm(for when: UInt64) {
        armedFor = when
        timer.schedule(deadline: DispatchTime(uptimeNanoseconds: when), leeway: Self.leeway)
    }
}
