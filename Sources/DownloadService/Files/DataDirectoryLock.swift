import Glibc

/// An exclusive lock on the data directory for the life of the process, so that two fetchd
/// processes never run the same jobs at once. The kernel drops it when the process dies, even by
/// kill -9, so a crash never leaves a stale lock behind.
final class DataDirectoryLock: Sendable {
    private let descriptor: Int32

    init(directory: String) throws(Configuration.Invalid) {
        let path = directory + "/fetchd.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Configuration.Invalid(description: describeErrno("cannot open \(path)")) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw Configuration.Invalid(description: "another fetchd is already using the data directory \(directory)")
        }
        descriptor = fd
    }

    deinit {
        close(descriptor)
    }
}
