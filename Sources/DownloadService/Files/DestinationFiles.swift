import DownloadCore
import Glibc
import Synchronization

/// Where a destination lands under the download root, checked without following symbolic links:
/// every directory on the way is opened with O_NOFOLLOW relative to the one before it, so a link
/// planted after submit cannot redirect the write outside the root.
struct DestinationFiles: Sendable {
    let root: String
    private let directory: RootDirectory

    init(root: String) {
        self.root = root
        directory = RootDirectory(path: root, name: "the download root")
    }

    /// At submit: is the path acceptable, and does a file already sit there?
    func check(_ destination: Destination) -> Result<Bool, FileProblem> {
        Checker(self).check(destination)
    }

    /// Checks destinations one after another at submit, remembering the last directory chain for
    /// the next one: a batch's items mostly share theirs. The chain is looked at with `fstatat`, not
    /// opened: a check at submit changes nothing, and the write opens the chain with O_NOFOLLOW
    /// again. Used by one request at a time.
    final class Checker {
        private let files: DestinationFiles
        private var last: (directories: ArraySlice<String>, walk: Result<String?, FileProblem>)?

        init(_ files: DestinationFiles) { self.files = files }

        func check(_ destination: Destination) -> Result<Bool, FileProblem> {
            guard destination.isValid else { return .failure(.invalid(DestinationFiles.notAPath)) }
            if last?.directories != destination.directories {
                last = (destination.directories, files.existingDirectory(destination.directories))
            }
            switch last?.walk {
            case .success(let path?)?: return files.inspect(path + "/" + destination.fileName)
            case .failure(let problem)?: return .failure(problem)
            case .success(nil)?, nil: return .success(false)  // a directory on the way does not exist yet
            }
        }
    }

    /// `path` is relative to the root.
    private func inspect(_ path: String) -> Result<Bool, FileProblem> {
        var info = stat()
        guard let rootFD = directory.descriptor() else { return .failure(.io(describeErrno("cannot open the download root"))) }
        guard fstatat(rootFD, path, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            return errno == ENOENT ? .success(false) : .failure(.io(describeErrno("cannot inspect the destination")))
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .success(true)
        case S_IFLNK: return .failure(.invalid("is a symbolic link"))
        case S_IFDIR: return .failure(.invalid("is a directory"))
        default: return .failure(.invalid("is not a regular file"))
        }
    }

    /// The path relative to the root of the directory `names` lead to, when each on the way
    /// exists and is a directory, not a link; nil when one does not exist yet.
    private func existingDirectory(_ names: ArraySlice<String>) -> Result<String?, FileProblem> {
        guard let rootFD = directory.descriptor() else { return .failure(.io(describeErrno("cannot open the download root"))) }
        var info = stat()
        var path = "."
        for name in names {
            path += "/" + name
            guard fstatat(rootFD, path, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
                if errno == ENOENT { return .success(nil) }
                return .failure(FileProblem(errno: errno, "cannot open directory '\(name)'"))
            }
            guard info.st_mode & S_IFMT == S_IFDIR else {
                return .failure(.invalid("'\(name)' on the way is a symbolic link or not a directory"))
            }
        }
        return .success(path)
    }

    /// Puts the finished partial file at its destination atomically: hard-link it onto the final name,
    /// which fails rather than replaces (no overwrite), or link it in under a temporary name and rename
    /// that onto the final one (overwrite). With `renameOnConflict` a taken name moves on to
    /// `name (1).ext`, `name (2).ext`, …: each is claimed by a link that fails rather than replaces,
    /// so two jobs can never take the same name. Gives the name used.
    /// The caller syncs the returned directory before it commits the completion
    /// (`PlacedDirectory.sync`, once per directory for a batch). The partial file stays until the
    /// completion is committed, so a crash in between is recognised at the next start by `isPlaced`.
    func place(partial: String, destination: Destination, jobID: String, overwrite: Bool,
               renameOnConflict: Bool = false) -> Result<(directory: PlacedDirectory, name: String), FileProblem> {
        guard destination.isValid, !destination.isDirectory else { return .failure(.invalid(Self.notAPath)) }
        let placed: PlacedDirectory
        switch directory.openDirectories(destination.directories, create: true) {
        case .success(let fd?): placed = PlacedDirectory(fd: fd, path: destination.directories.joined(separator: "/"))
        case .success(nil): return .failure(.io("cannot create the destination directory"))
        case .failure(let problem): return .failure(problem)
        }
        let dir = placed.fd
        let name = destination.fileName
        // The staging directory shares the root's file system (checked at start), so these are links, not copies.
        guard overwrite else {
            // Straight onto the name: one link per file, and the partial file stays a second link
            // until the completion is committed, which `isPlaced` recognises after a crash.
            for number in 0...(renameOnConflict ? Self.maxRenameNumber : 0) {
                let candidate = number == 0 ? name : FileName.renamed(name, number: number)
                if linkat(AT_FDCWD, partial, dir, candidate, 0) == 0 { return .success((placed, candidate)) }
                guard errno == EEXIST else { return .failure(FileProblem(errno: errno, "cannot move the download into place")) }
            }
            return .failure(.exists)
        }
        let temporary = DestinationPath.reservedPrefix + jobID + ".tmp"
        unlinkat(dir, temporary, 0)  // a leftover from a crash
        guard linkat(AT_FDCWD, partial, dir, temporary, 0) == 0 else {
            return .failure(FileProblem(errno: errno, "cannot link the download into place"))
        }
        defer { unlinkat(dir, temporary, 0) }
        guard renameat(dir, temporary, dir, name) == 0 else {
            return .failure(errno == EISDIR ? .invalid("is a directory") : FileProblem(errno: errno, "cannot move the download into place"))
        }
        return .success((placed, name))
    }

    /// How far `onConflict: rename` counts before it gives up with `destination_exists`.
    static let maxRenameNumber = 9999

    /// True when the destination is the very file (same inode) as the partial file: a completion
    /// that was placed but not yet committed when fetchd stopped.
    func isPlaced(partial: String, destination: Destination) -> Bool {
        var partialInfo = stat()
        guard stat(partial, &partialInfo) == 0, let placed = statDestination(destination) else { return false }
        return placed.st_ino == partialInfo.st_ino && placed.st_dev == partialInfo.st_dev
    }

    /// The name a completion placed but not committed when fetchd stopped went under: the entry of
    /// the destination's directory that is the very file (same inode) as the partial file. A
    /// directory destination's file and a renamed one can have any name there, so the directory is
    /// read — only when the partial file has another link at all.
    func placedName(partial: String, in destination: Destination) -> String? {
        var partialInfo = stat()
        guard stat(partial, &partialInfo) == 0, partialInfo.st_nlink > 1, destination.isValid,
              case .success(let dir?) = directory.openDirectories(destination.directories, create: false) else { return nil }
        guard let stream = fdopendir(dir) else {
            close(dir)
            return nil
        }
        defer { closedir(stream) }
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            var info = stat()
            // fetchd's own temporary link is the same file too, but not a placed one.
            guard !name.hasPrefix(DestinationPath.reservedPrefix), fstatat(dirfd(stream), name, &info, AT_SYMLINK_NOFOLLOW) == 0,
                  info.st_ino == partialInfo.st_ino, info.st_dev == partialInfo.st_dev else { continue }
            return name
        }
        return nil
    }

    /// Makes the entries of the destination's directory durable, for a completion found placed at
    /// start (`Recovery`): nil once synced, or what failed.
    func syncDirectory(of destination: Destination) -> String? {
        guard destination.isValid, case .success(let fd?) = directory.openDirectories(destination.directories, create: false) else {
            return "cannot open the directory of '\(destination.path)'"
        }
        return PlacedDirectory.sync([PlacedDirectory(fd: fd, path: destination.directories.joined(separator: "/"))])
    }

    /// Undoes `place` when the completion could not be committed (the job was cancelled meanwhile);
    /// whether the destination was the partial file and is taken out.
    @discardableResult
    func unplace(partial: String, destination: Destination) -> Bool {
        guard isPlaced(partial: partial, destination: destination),
              case .success(let dir?) = directory.openDirectories(destination.directories, create: false) else { return false }
        defer { close(dir) }
        return unlinkat(dir, destination.fileName, 0) == 0
    }

    private func statDestination(_ destination: Destination) -> stat? {
        guard destination.isValid, case .success(let dir?) = directory.openDirectories(destination.directories, create: false) else { return nil }
        defer { close(dir) }
        var info = stat()
        return fstatat(dir, destination.fileName, &info, AT_SYMLINK_NOFOLLOW) == 0 ? info : nil
    }

    private static let notAPath = "is not a valid path"

}

/// A destination directory a file was just linked into, open until its entries are synced.
final class PlacedDirectory {
    fileprivate let fd: Int32
    /// Relative to the download root; no links on the way, so equal paths are the same directory.
    let path: String

    fileprivate init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close(fd) }

    /// Makes the new names durable: one fsync per distinct directory. Nil once all are synced, or
    /// what failed: until a name is durable a crash may lose it, so its completion waits.
    static func sync(_ directories: [PlacedDirectory]) -> String? {
        var synced = Set<String>()
        for directory in directories where synced.insert(directory.path).inserted {
            guard fsync(directory.fd) == 0 else { return describeErrno("cannot sync the directory '\(directory.path)'") }
        }
        return nil
    }
}
