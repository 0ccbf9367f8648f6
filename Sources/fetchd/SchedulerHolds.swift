import DownloadService
import Glibc
import Synchronization

/// With `FETCHD_TEST_SIGNALS=1` (for the end-to-end tests; not a setting): SIGUSR1 holds the
/// scheduler's queue, as a hung scheduler would, and SIGUSR2 lets it go, so that the tests can
/// see the service manager's watchdog pings stop and start again.
final class SchedulerHolds: Sendable {
    static let signals = [SIGUSR1, SIGUSR2]
    private let service: DownloadService
    private let releases = Mutex<[@Sendable () -> Void]>([])

    /// Nil unless `FETCHD_TEST_SIGNALS=1`.
    init?(environment: [String: String], service: DownloadService) {
        guard environment["FETCHD_TEST_SIGNALS"] == "1" else { return nil }
        self.service = service
    }

    func handle(_ number: Int32) {
        if number == SIGUSR1 {
            let release = service.holdScheduler()
            releases.withLock { $0.append(release) }
        } else {
            releases.withLock { held in
                defer { held = [] }
                return held
            }.forEach { $0() }
        }
    }
}
