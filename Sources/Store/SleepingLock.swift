import Glibc

/// A value behind a lock whose waiters sleep at once: a plain (non-priority-inheriting) pthread
/// mutex. `Synchronization.Mutex` on Linux is a priority-inheriting futex, and a contended one
/// spins, in its own slow path and in the kernel's rt_mutex, while the owner runs. For the store's
/// writer, whose transactions last hundreds of microseconds, a waiter (an intake batch, webhook
/// outcomes) so spun away a core the writer's owner could have used: `rt_mutex_slowlock_block`
/// was 2.3-2.7 % of fetchd's samples with 2,000 small files on two cores.
final class SleepingLock<Value>: @unchecked Sendable {  // `value` is used only while `mutex` is held
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let value: Value

    init(_ value: Value) {
        self.value = value
        // Default attributes: PTHREAD_MUTEX_NORMAL, which glibc does not spin on (only the adaptive kind does).
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<T>(_ body: (Value) throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(value)
    }
}
