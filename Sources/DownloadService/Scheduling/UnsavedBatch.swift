import Confinement
import Dispatch

/// What a store write did not take (the database could not be written): written again after
/// `delay`, before anything newer, until the store takes it. One retry is armed however many
/// writes fail meanwhile.
final class UnsavedBatch<Item>: QueueConfined, @unchecked Sendable {  // `items` and `armed` only on `queue` (assertOnQueue)
    let queue: DispatchQueue
    private let delay: DispatchTimeInterval
    private let retry: () -> Void
    private var items: [Item] = []
    private var armed = false

    /// `retry` runs on `queue` after a failed write; it writes `take(adding: [])`.
    init(queue: DispatchQueue, delay: DispatchTimeInterval, retry: @escaping () -> Void) {
        self.queue = queue
        self.delay = delay
        self.retry = retry
    }

    /// The unsaved items followed by `newer`, handed out for the next write; on the queue.
    func take(adding newer: [Item]) -> [Item] {
        assertOnQueue()
        defer { items = [] }
        return items + newer
    }

    /// The write of `batch` failed: keep it for the retry; on the queue.
    func keep(_ batch: [Item]) {
        assertOnQueue()
        items = batch
        guard !armed else { return }
        armed = true
        queue.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self else { return }
            armed = false
            retry()
        }
    }
}
