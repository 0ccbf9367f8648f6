import Glibc
import Synchronization

/// What went wrong with a file under a root (the download root, the upload root).
enum FileProblem: Error, Equatable {
    case invalid(String)
    case exists
    case diskFull
    case io(String)

    /// A failed call's `errno`: a full disk or quota as such, anything else with `message`.
    init(errno code: Int32, _ message: String) {
        self = code == ENOSPC || code == EDQUOT ? .diskFull : .io("\(message): \(String(cString: strerror(code)))")
    }
}

/// A directory that paths are looked up under without following symbolic links: kept open from
/// its first use, and each directory on the way opened with O_NOFOLLOW relative to the one before
/// it, so a link planted after a check cannot lead outside.
struct RootDirectory: Sendable {
    let path: String
    /// What errors call it ("the download root"): never its path, which clients are not shown.
    let name: String
    private let openRoot: OpenRoot

    init(path: String, name: String) {
        self.path = path
        self.name = name
        openRoot = OpenRoot(path: path)
    }

    /// The root's descriptor, kept open (the caller does not close it); nil if it cannot be opened.
    func descriptor() -> Int32? { openRoot.descriptor() }

    /// Opens the directory chain under the root without following links. `.success(nil)` means a
    /// directory does not exist (and `create` was false).
    func openDirectories(_ names: ArraySlice<String>, create: Bool) -> Result<Int32?, FileProblem> {
        // From the root kept open: placing a file looks up its own directories, not the root's
        // whole path again (an open and a close fewer per file). The caller owns what is returned.
        guard let rootFD = descriptor() else { return .failure(.io(describeErrno("cannot open \(name)"))) }
        var dir = rootFD
        func release() { if dir != rootFD { close(dir) } }
        for segment in names {
            var next = openat(dir, segment, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if next < 0 && errno == ENOENT {
                guard create else { release(); return .success(nil) }
                if mkdirat(dir, segment, 0o755) != 0 && errno != EEXIST {
                    let failure = FileProblem(errno: errno, "cannot create directory '\(segment)'")
                    release()
                    return .failure(failure)
                }
                next = openat(dir, segment, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            let openErrno = errno
            release()
            guard next >= 0 else {
                if openErrno == ELOOP || openErrno == ENOTDIR {
                    return .failure(.invalid("'\(segment)' on the way is a symbolic link or not a directory"))
                }
                return .failure(FileProblem(errno: openErrno, "cannot open directory '\(segment)'"))
            }
            dir = next
        }
        guard dir == rootFD else { return .success(dir) }
        // A file right under the root: a descriptor of the caller's own.
        let own = openat(rootFD, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        return own >= 0 ? .success(own) : .failure(.io(describeErrno("cannot open \(name)")))
    }
}

func describeErrno(_ message: String) -> String {
    "\(message): \(String(cString: strerror(errno)))"
}

/// A root opened at its first use and kept open. One that could not be opened is tried again next time.
private final class OpenRoot: Sendable {
    private let path: String
    private let fd = Mutex<Int32>(-1)

    init(path: String) { self.path = path }

    deinit { fd.withLock { if $0 >= 0 { close($0) } } }

    func descriptor() -> Int32? {
        fd.withLock { fd in
            if fd < 0 { fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
            return fd >= 0 ? fd : nil
        }
    }
}
