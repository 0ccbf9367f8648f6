import DownloadCore
import Glibc
import Persistence

/// The partial downloads under `<data dir>/partial/<id>`: the bytes received so far, kept across
/// attempts, pauses and restarts until the job ends — or, for a job that failed in a way a retry
/// can go on from, until it is retried or pruned.
struct PartialFiles: Sendable {
    let directory: String

    func path(_ id: String) -> String { directory + "/" + id }

    /// The file's length: the truth about how much has been received, whatever a counter says.
    func size(_ id: String) -> Int64 {
        var info = stat()
        return stat(path(id), &info) == 0 ? Int64(info.st_size) : 0
    }

    func remove(_ id: String) {
        unlink(path(id))
    }

    /// An empty partial file, for a job that has none, as the mark of work left after its
    /// completion commits (an upload's `deleteSource`); whether it is there.
    func mark(_ id: String) -> Bool {
        let fd = open(path(id), O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }

    /// A cancelled job's partial file, removed unless it has a name besides: a completion placed it
    /// and waits to commit — refused, it takes the file back out by comparing it with the partial
    /// file, then removes that (as the next start does, if a stop comes first).
    func removeUnlessPlaced(_ id: String) {
        var info = stat()
        if stat(path(id), &info) == 0, info.st_nlink > 1 { return }
        remove(id)
    }

    /// Removes the partial files no job keeps: of jobs that are gone (pruned) or that completed or
    /// were cancelled (`removeUnlessPlaced`). A failed job's partial file is there only if a retry
    /// can use it. `found` sees each job that has one first, and keeps its file for now by
    /// answering false.
    static func removeUnkept(_ partials: PartialFiles, store: any JobStore, found: (Download) -> Bool = { _ in true }) throws {
        for id in partials.ids() {
            let job = try store.download(id: id)
            if let job, !found(job) { continue }
            switch job?.state {
            case nil, .completed?: partials.remove(id)
            case .cancelled?: partials.removeUnlessPlaced(id)
            default: break
            }
        }
    }

    /// The ids of every partial file present.
    func ids() -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var ids: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { ids.append(name) }
        }
        return ids
    }
}
