import Crypto
import DownloadCore
import Glibc
import Transfer

/// An object attempt's partial file: the origin's bytes land in it at their offsets, each part
/// is read back to be hashed and sent, and its stretch is given back to the file system once the
/// part is committed. The file keeps its length, so the download resumes at its end; the parts
/// before read as zeros and take no disk.
struct StagingFile: Sendable {
    let path: String

    enum Failure: Error {
        case io(String)
    }

    /// The file's length now (0 when there is none).
    var length: Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }

    /// Whether the file's first bytes are a hole: parts of it went up and were released.
    var beginsWithHole: Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_size > 0 else { return false }
        // SEEK_DATA (from <unistd.h>, left out of Swift's Glibc): where the first data is; ENXIO when none.
        return lseek(fd, 0, Self.seekData) != 0
    }

    private static let seekData: Int32 = 3

    /// Exactly `length` bytes long, all of them in order: a missing or shorter file grows by a hole
    /// (the committed parts of an upload staged elsewhere), a longer one is cut to it, and the mark
    /// of `markOutOfOrder` is cleared.
    func setLength(_ length: Int64) throws(Failure) {
        try withOpenFile { fd throws(Failure) in
            guard ftruncate(fd, off_t(length)) == 0 else {
                throw .io("cannot size the partial file: \(String(cString: strerror(errno)))")
            }
            try setMark(fd, false)
        }
    }

    /// Marks the file, before parts are fetched into it at their offsets over several connections:
    /// a part half fetched then leaves a hole below bytes already in, so the file's length no longer
    /// says how much arrived. A later attempt finding the mark (`isOutOfOrder`) keeps only what was
    /// committed. The mark is the owner's execute bit, which nothing else sets on a data file: it
    /// lives and goes with the file, and another node taking the job over sees it too.
    func markOutOfOrder() throws(Failure) {
        try withOpenFile { fd throws(Failure) in try setMark(fd, true) }
    }

    /// Whether the file is marked by `markOutOfOrder` (and not set in order since).
    var isOutOfOrder: Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IXUSR != 0
    }

    private func withOpenFile(_ body: (Int32) throws(Failure) -> Void) throws(Failure) {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .io("cannot open the partial file: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        try body(fd)
    }

    private func setMark(_ fd: Int32, _ marked: Bool) throws(Failure) {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .io("cannot read the partial file's mode: \(String(cString: strerror(errno)))") }
        let mode = marked ? info.st_mode | S_IXUSR : info.st_mode & ~S_IXUSR
        guard mode == info.st_mode || fchmod(fd, mode & 0o7777) == 0 else {
            throw .io("cannot mark the partial file: \(String(cString: strerror(errno)))")
        }
    }

    /// Reads bytes `range` and hashes them: into `digest` (the object's, in order) and on their own
    /// (the part's SHA-256, lowercase hex, which its upload is signed with).
    func hash(_ range: Range<Int64>, into digest: inout ResumableDigest) throws(Failure) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .io("cannot open the partial file: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var part = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset = range.lowerBound
        while offset < range.upperBound {
            let wanted = Int(min(Int64(buffer.count), range.upperBound - offset))
            let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, wanted, off_t(offset)) }
            guard count > 0 else {
                throw .io(count == 0 ? "the partial file ends before byte \(range.upperBound)"
                                     : "cannot read the partial file: \(String(cString: strerror(errno)))")
            }
            buffer.withUnsafeBytes { bytes in
                let read = UnsafeRawBufferPointer(rebasing: bytes[..<count])
                digest.update(read)
                part.update(bufferPointer: read)
            }
            offset += Int64(count)
        }
        return Array(part.finalize()).hex
    }

    /// Gives the disk under bytes `range` back (a hole that reads as zeros); the length stays.
    /// Where the file system cannot punch holes the bytes stay: only the bound on disk use is lost.
    func release(_ range: Range<Int64>) {
        guard let punch = Self.fallocate, !range.isEmpty else { return }
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        _ = punch(fd, Self.punchHole | Self.keepSize, off_t(range.lowerBound), off_t(range.count))
    }

    private typealias Fallocate = @Sendable @convention(c) (Int32, Int32, off_t, off_t) -> Int32

    /// FALLOC_FL_KEEP_SIZE and FALLOC_FL_PUNCH_HOLE, from <linux/falloc.h>.
    private static let keepSize: Int32 = 0x01
    private static let punchHole: Int32 = 0x02

    /// Swift's Glibc module leaves fallocate out (glibc declares it only under _GNU_SOURCE), so it
    /// is looked up at run time.
    private static let fallocate: Fallocate? = {
        guard let program = dlopen(nil, RTLD_NOW), let symbol = dlsym(program, "fallocate") else { return nil }
        return unsafeBitCast(symbol, to: Fallocate.self)
    }()
}
