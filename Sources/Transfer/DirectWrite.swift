import Glibc

/// Writes the page-aligned body of a full chunk with O_DIRECT, from the chunk's memory straight to
/// the disk, rather than copying it into the page cache first. For a fast download that copy is as
/// much CPU as SHA-256 (a quarter of fetchd's samples over HTTPS, on two cores shared with the
/// origin's TLS); the disk takes a large aligned write at about twice the speed of a fast network.
///
/// Only large chunks that start on a page boundary of the file go this way (`WriteChunk` realigns
/// after a chunk handed over early); the rest of a chunk, small chunks (slow transfers, where a
/// direct write would wait for the disk for a few KiB) and a file system that refuses O_DIRECT go
/// through the page cache as before, and so do chunks that find the writer behind (`FileWriter`).
/// The file's fsync at the end covers both kinds of write.
/// Used only on its `FileWriter`'s queue.
final class DirectWrite {
    /// A second descriptor of the file, opened with O_DIRECT; nil once a direct write failed.
    private var fd: Int32?

    /// O_DIRECT, which Swift's Glibc module leaves out (glibc defines it only under _GNU_SOURCE).
    #if arch(x86_64) || arch(i386)
    private static let flag: Int32? = 0o40000
    #elseif arch(arm64) || arch(arm)
    private static let flag: Int32? = 0o200000
    #else
    private static let flag: Int32? = nil
    #endif

    /// Opens `path` again for direct writes, if it is still the file `file` has open; if that
    /// fails, every write goes through the page cache.
    init(path: String, sameAs file: Int32) {
        guard let flag = Self.flag else { return }
        let fd = Glibc.open(path, O_WRONLY | O_CLOEXEC | flag)
        guard fd >= 0 else { return }
        var opened = stat()
        var original = stat()
        guard fstat(fd, &opened) == 0, fstat(file, &original) == 0,
              opened.st_dev == original.st_dev, opened.st_ino == original.st_ino else {
            Glibc.close(fd)
            return
        }
        self.fd = fd
    }

    /// Writes the longest page-aligned prefix of `chunk` directly, if it may; returns how many bytes
    /// that was (0: the caller writes all of it). A failure other than an interrupted call stops
    /// direct writes for this file and leaves what was not written to the caller, whose buffered
    /// write then reports a lasting error (ENOSPC, EIO) as usual.
    func writePrefix(of chunk: WriteChunk) -> Int {
        guard let fd, chunk.isLarge, chunk.offset % Int64(WriteChunk.pageSize) == 0,
              let base = chunk.bytes.baseAddress, Int(bitPattern: base) % WriteChunk.pageSize == 0
        else { return 0 }
        let aligned = chunk.count - chunk.count % WriteChunk.pageSize
        var done = 0
        while done < aligned {
            let count = pwrite(fd, base.advanced(by: done), aligned - done, off_t(chunk.offset) + off_t(done))
            if count < 0, errno == EINTR { continue }
            // A short direct write leaves an unaligned rest: it goes through the page cache.
            guard count > 0, count % WriteChunk.pageSize == 0 else {
                if count < 0 { stop() }
                return done + max(0, count)
            }
            done += count
        }
        return done
    }

    /// Closes the descriptor; later writes go through the page cache.
    func stop() {
        guard let fd else { return }
        Glibc.close(fd)
        self.fd = nil
    }
}
