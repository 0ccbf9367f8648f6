import Synchronization

/// How far into its file a transfer may write, raised by its owner as room is made: a download
/// whose bytes go on elsewhere (an object's parts) keeps a bounded stretch on disk. A transfer
/// that reaches the limit holds its body (curl pauses the connection, and the stall clock stops)
/// until the limit is raised past what it holds. The owner learns how far the file is written
/// from `onWritten`, after each write — progress reports stop while the transfer waits, and the
/// owner must see the bytes that let it raise the limit.
public final class WriteLimit: Sendable {
    private struct State {
        var limit: Int64
        /// The paused transfer's way to be woken (`FileSink`'s `onWritable`).
        var waiter: (@Sendable () -> Void)?
    }

    private let state: Mutex<State>
    private let onWritten: @Sendable (Int64) -> Void

    /// `onWritten` gets the file's written length after each write, on the file's writer queue:
    /// keep it cheap.
    public init(_ limit: Int64, onWritten: @escaping @Sendable (Int64) -> Void = { _ in }) {
        state = Mutex(State(limit: limit))
        self.onWritten = onWritten
    }

    /// The file's writer wrote up to `length`.
    func written(_ length: Int64) {
        onWritten(length)
    }

    public var limit: Int64 { state.withLock { $0.limit } }

    /// Lets the transfer write up to `limit` (a lower value is ignored); wakes it if it waits.
    public func raise(to limit: Int64) {
        let waiter: (@Sendable () -> Void)? = state.withLock { state in
            guard limit > state.limit else { return nil }
            state.limit = limit
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?()
    }

    /// Whether the file may grow to `end`; if not, `waiter` runs once the limit is raised.
    func admits(_ end: Int64, orCall waiter: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            if end <= state.limit { return true }
            state.waiter = waiter
            return false
        }
    }
}
