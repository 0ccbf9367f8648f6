import Glibc

/// Free space where downloads are written: the smaller of the partial directory's and the download
/// root's file systems (they are usually one).
struct DiskSpace: Sendable {
    let paths: [String]

    func freeBytes() -> Int64? {
        paths.compactMap { path -> Int64? in
            var info = statvfs()
            guard statvfs(path, &info) == 0 else { return nil }
            return Int64(info.f_bavail) * Int64(info.f_frsize)
        }.min()
    }
}
