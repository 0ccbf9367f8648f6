import DownloadCore
import Synchronization

/// A shared, thread-safe source of creation-ordered ids.
final class IDSource: Sendable {
    private let generator = Mutex(DownloadIDGenerator())

    func next(now: Int64) -> String {
        generator.withLock { $0.next(now: now) }
    }
}
