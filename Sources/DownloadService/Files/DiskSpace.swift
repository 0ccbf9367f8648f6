import Glibc
import Synchronization

/// Free space where downloads are written: the smaller of the partial directory's and the download
/// root's file systems (they are usually one).
final class DiskSpace: Sendable {
    let paths: [String]
    /// The last measurement and when it was taken (milliseconds since the epoch).
    private let latest = Mutex<(bytes: Int64?, at: Int64)?>(nil)

    /// How old a measurement the API's explanations may use: they ask on every request, and two
    /// statvfs calls per request showed in profiles of `POST /downloads`.
    static let readerMaxAge: Int64 = 250

    init(paths: [String]) {
        self.paths = paths
    }

    /// Measures now.
    func freeBytes(now: Int64) -> Int64? {
        let bytes = paths.compactMap { path -> Int64? in
            var info = statvfs()
            guard statvfs(path, &info) == 0 else { return nil }
            return Int64(info.f_bavail) * Int64(info.f_frsize)
        }.min()
        latest.withLock { $0 = (bytes, now) }
        return bytes
    }

    /// The last measurement if it is at most `maxAge` old, else a new one.
    func freeBytes(now: Int64, maxAge: Int64) -> Int64? {
        if let (bytes, at) = latest.withLock({ $0 }), now - at <= maxAge, at <= now { return bytes }
        return freeBytes(now: now)
    }
}
