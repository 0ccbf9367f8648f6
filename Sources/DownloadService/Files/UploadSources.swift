import DownloadCore
import Glibc
import Logging

/// The files uploads send, under the upload root: looked up without following symbolic links
/// (the destination rules), pinned at submit by size and modification time, and held to that pin
/// when an attempt opens them — a source that changed is never sent as if it were the same.
struct UploadSources: Sendable {
    private let directory: RootDirectory

    init(root: String) {
        directory = RootDirectory(path: root, name: "the upload root")
    }

    enum Problem: Error, Equatable {
        case missing
        case invalid(String)
        /// Not the file that was pinned: another size or modification time.
        case changed
        case io(String)
    }

    /// At submit: the source as it is now, to pin.
    func pin(_ source: Destination) -> Result<SourcePin, Problem> {
        open(source) { file, _ in .success(file.pin) }
    }

    /// For an attempt: the source open for reading, if it is still the file pinned.
    func open(_ source: Destination, pinned: SourcePin) -> Result<SourceFile, Problem> {
        open(source) { file, _ in file.pin == pinned ? .success(file) : .failure(.changed) }
    }

    /// `deleteSource`, once the upload is committed: removes the source if it is still the file
    /// sent (one changed since is someone's new data, and stays). Whether it was removed.
    func remove(_ source: Destination, pinned: SourcePin) -> Bool {
        let removed = open(source) { file, dir -> Result<Bool, Problem> in
            .success(file.pin == pinned && unlinkat(dir, source.fileName, 0) == 0)
        }
        // One that cannot be opened (gone, replaced by a link) is not removed either.
        guard case .success(true) = removed else { return false }
        return true
    }

    /// `deleteSource` of `upload`, completed: its source removed if it is still the file sent, a
    /// warning if not.
    func removeSent(by upload: Download, logger: Logger) {
        guard let plan = upload.upload, plan.deleteSource else { return }
        if !remove(plan.source, pinned: plan.pin) {
            logger.warning("the source was not removed: it changed or is gone", metadata: ["download.id": "\(upload.id)"])
        }
    }

    /// Opens the source (a regular file, reached without links) and hands it to `body` with its
    /// directory's descriptor, both open while `body` runs.
    private func open<T>(_ source: Destination, _ body: (SourceFile, Int32) -> Result<T, Problem>) -> Result<T, Problem> {
        guard source.isValid, !source.isDirectory, !source.isObject else { return .failure(.invalid("is not a file's path")) }
        let dir: Int32
        switch directory.openDirectories(source.directories, create: false) {
        case .success(let opened?): dir = opened
        case .success(nil): return .failure(.missing)
        case .failure(.invalid(let message)): return .failure(.invalid(message))
        case .failure(.io(let message)): return .failure(.io(message))
        case .failure(.diskFull), .failure(.exists): return .failure(.io("cannot open the source's directory"))
        }
        defer { close(dir) }
        // O_NONBLOCK: opening a FIFO planted there must not wait for a writer (it is refused below).
        let fd = openat(dir, source.fileName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            switch errno {
            case ENOENT: return .failure(.missing)
            case ELOOP: return .failure(.invalid("is a symbolic link"))
            default: return .failure(.io(describeErrno("cannot open the source")))
            }
        }
        let file = SourceFile(fd: fd)
        guard let info = file.status() else { return .failure(.io(describeErrno("cannot inspect the source"))) }
        guard info.st_mode & S_IFMT == S_IFREG else { return .failure(.invalid("is not a regular file")) }
        return body(file, dir)
    }
}

/// An upload's source, open for reading until released.
final class SourceFile: Sendable {
    let fd: Int32

    init(fd: Int32) { self.fd = fd }

    deinit { close(fd) }

    /// Its size and modification time now; a file that cannot be inspected matches no pin.
    var pin: SourcePin {
        guard let info = status() else { return SourcePin(size: -1, modifiedAt: -1) }
        return SourcePin(size: Int64(info.st_size), modifiedAt: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }

    fileprivate func status() -> stat? {
        var info = stat()
        return fstat(fd, &info) == 0 ? info : nil
    }
}
