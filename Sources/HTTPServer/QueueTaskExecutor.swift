import Dispatch

/// Runs tasks on a serial dispatch queue.
///
/// A connection runs its handler and stream tasks with this as their executor preference, so
/// they run on the connection's own queue: code between suspension points may touch the
/// connection's state, and a response is written without a hop to another thread (each hop
/// wakes a thread, which dominated the cost of small requests).
final class QueueTaskExecutor: TaskExecutor {
    let queue: DispatchQueue

    init(queue: DispatchQueue) {
        self.queue = queue
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
