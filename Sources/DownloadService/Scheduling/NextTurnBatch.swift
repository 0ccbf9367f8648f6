import Confinement
import Dispatch

/// Items gathered on a serial queue and handed over together at the queue's next turn: whatever
/// arrives while the queue is busy becomes one batch (one transaction) instead of one each. With a
/// `delay`, the batch is handed over that long after its first item instead, gathering more.
final class NextTurnBatch<Item>: QueueConfined, @unchecked Sendable {  // `items` and `queued` only on `queue` (assertOnQueue)
    let queue: DispatchQueue
    private let delay: DispatchTimeInterval?
    private let flush: ([Item]) -> Void
    private var items: [Item] = []
    private var queued = false

    init(queue: DispatchQueue, delay: DispatchTimeInterval? = nil, flush: @escaping ([Item]) -> Void) {
        self.queue = queue
        self.delay = delay
        self.flush = flush
    }

    /// Adds an item to the batch that the queue's next turn flushes; on the queue.
    func add(_ item: Item) {
        assertOnQueue()
        items.append(item)
        wake()
    }

    /// Makes the queue's next turn flush, even with nothing added (the flush may have more to do); on the queue.
    func wake() {
        assertOnQueue()
        guard !queued else { return }
        queued = true
        guard let delay else { return queue.async { self.flushNow() } }
        queue.asyncAfter(deadline: .now() + delay) { self.flushNow() }
    }

    /// The items added since the last flush, taken now (the next turn's flush finds none); on the queue.
    func take() -> [Item] {
        assertOnQueue()
        let taken = items
        items = []
        return taken
    }

    private func flushNow() {
        queued = false
        flush(take())
    }
}
