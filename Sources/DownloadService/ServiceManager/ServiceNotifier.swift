import Dispatch
import DownloadCore
import Glibc
import Synchronization

/// What the watchdog's probe found: whether fetchd works, and a line for `systemctl status`.
public struct ServiceHealth: Sendable, Equatable {
    public var alive: Bool
    public var status: String

    public init(alive: Bool, status: String) {
        self.alive = alive
        self.status = status
    }
}

/// Tells the service manager how fetchd is (sd_notify's protocol over `NotifySocket`): `READY=1`
/// once it serves, then each tick `STATUS=` and, while the probe answers and finds fetchd alive,
/// `WATCHDOG=1`; `STOPPING=1` when it stops. A tick is half of `WATCHDOG_USEC`, as sd_watchdog_enabled(3)
/// advises, or `statusInterval` without a watchdog. The probe runs on a queue of its own and may
/// block (it waits for the scheduler's queue and the store's writer); while one has not returned,
/// ticks start no other and send nothing, so a hung fetchd stops the pings and is restarted.
public final class ServiceNotifier: Sendable {
    public static let statusInterval: Duration = .seconds(10)

    private struct State {
        var timer: DispatchSourceTimer?
        var probing = false
    }

    private let socket: NotifySocket
    /// Half of WATCHDOG_USEC; nil without a watchdog for this process.
    let watchdogTick: Duration?
    private let probe: @Sendable () -> ServiceHealth
    private let probeQueue = DispatchQueue(label: "fetchd.notify.probe")
    private let timerQueue = DispatchQueue(label: "fetchd.notify.timer")
    private let state = Mutex(State())

    /// Nil when no service manager listens (`NOTIFY_SOCKET` unset). A malformed `NOTIFY_SOCKET`
    /// or `WATCHDOG_USEC` is an error naming it.
    public init?(environment: [String: String], processID: Int32 = getpid(),
                 probe: @escaping @Sendable () -> ServiceHealth) throws {
        guard let socket = try NotifySocket(environment: environment) else { return nil }
        self.socket = socket
        self.probe = probe
        watchdogTick = try Self.watchdogTick(environment: environment, processID: processID)
    }

    /// Half of `WATCHDOG_USEC` when it is meant for this process (`WATCHDOG_PID` unset or ours).
    static func watchdogTick(environment: [String: String], processID: Int32) throws -> Duration? {
        guard let text = environment["WATCHDOG_USEC"] else { return nil }
        if let pid = environment["WATCHDOG_PID"], Int32(pid) != processID { return nil }
        guard let microseconds = Int64(text), microseconds > 0 else {
            throw NotifySocket.Invalid(description: "WATCHDOG_USEC=\(text): expected a positive number of microseconds")
        }
        return .microseconds(microseconds / 2)
    }

    /// fetchd listens and has recovered: `READY=1`, then the ticks begin.
    public func ready(status: String) {
        socket.send("READY=1\nSTATUS=\(status)\nMAINPID=\(getpid())")
        let tick = watchdogTick ?? Self.statusInterval
        let milliseconds = max(Int(tick.wholeMilliseconds), 1)
        state.withLock { state in
            let timer = DispatchSource.makeTimerSource(queue: timerQueue)
            timer.schedule(deadline: .now() + .milliseconds(milliseconds), repeating: .milliseconds(milliseconds),
                           leeway: .milliseconds(milliseconds / 20))
            timer.setEventHandler { [weak self] in self?.tick() }
            timer.resume()
            state.timer = timer
        }
    }

    /// fetchd began to stop: `STOPPING=1`. The ticks go on while it drains.
    public func stopping() {
        socket.send("STOPPING=1\nSTATUS=stopping")
    }

    private func tick() {
        let start = state.withLock { state in
            defer { state.probing = true }
            return !state.probing
        }
        guard start else { return }
        probeQueue.async { [self] in
            let health = probe()
            socket.send(health.alive && watchdogTick != nil ? "WATCHDOG=1\nSTATUS=\(health.status)" : "STATUS=\(health.status)")
            state.withLock { $0.probing = false }
        }
    }
}
