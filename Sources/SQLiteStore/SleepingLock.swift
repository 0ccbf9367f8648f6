import Glibc

/// A value behind a lock whose waiters sleep at once: a plain (non-priority-inheriting) pthread
/// mutex. `Synchronization.Mutex` on Linux is a priority-inheriting futex, and a contended one
/// spins, in its own slow path and in the kernel's rt_mutex, while the owner runs. For the store's
/// writer, whose transactions last hundreds of microseconds, a waiter (an intake batch, webhook
/// outcomes) so spun away a core the writer's owner could have used: `rt_mutex_slowlock_block`
/// was 2.3-2.7 % of fetchd's samples with 2,000 small files on two cores.
///
/// `@unchecked Sendable`: `value` is reached only through `withLock`, while `mutex` is held. Debug
/// builds check the lock itself: a thread that takes it again while holding it fails at once
/// instead of deadlocking.
final class SleepingLock<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let value: Value

    init(_ value: Value) {
        self.value = value
        // PTHREAD_MUTEX_NORMAL, which glibc does not spin on (only the adaptive kind does); in debug
        // builds the error-checking kind, which does not spin either and refuses a relock (EDEADLK).
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        #if DEBUG
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK))
        #else
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_NORMAL))
        #endif
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<T>(_ body: (Value) throws -> T) rethrows -> T {
        let locked = pthread_mutex_lock(mutex)
        assert(locked == 0, "SleepingLock taken again by the thread that holds it")
        defer { pthread_mutex_unlock(mutex) }
        return try body(value)
    }
}
