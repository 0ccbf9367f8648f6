import Dispatch

/// Runs the API's store writes (pause, resume, cancel) one at a time off the HTTP event loops: a
/// write may wait for SQLite's single writer behind a scheduler batch, and an event loop that
/// waited with it would stall every connection it serves. Reads stay on the loops (README,
/// Architecture: "Where work runs").
struct WriteQueue: Sendable {
    private let queue = DispatchQueue(label: "fetchd.api-writes")

    func perform<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }
}
