import Dispatch

/// A class whose mutable state is used only on one serial queue, which makes it `Sendable`:
/// `assertOnQueue()` at each entry point checks that in debug builds (release builds skip it).
public protocol QueueConfined: AnyObject {
    var queue: DispatchQueue { get }
}

extension QueueConfined {
    /// Inlinable, so that in release builds the empty call costs the hot paths nothing.
    @inlinable
    public func assertOnQueue() {
        #if DEBUG
        dispatchPrecondition(condition: .onQueue(queue))
        #endif
    }
}
