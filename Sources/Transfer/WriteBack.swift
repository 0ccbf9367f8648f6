import Confinement
import Dispatch
import Glibc

/// Starts writing a file's newly written ranges back to disk while the download goes on:
/// sync_file_range(2) with SYNC_FILE_RANGE_WRITE every few MiB. Left to the kernel, a machine with
/// plenty of memory writes nothing back until the fsync at the end, which then waits for the whole
/// file; started early, the disk works beside the network and the fsync finds little left.
///
/// With `dropsWritten`, each range's pages also leave the page cache once they are on disk (the
/// range before the one whose write-back starts): the file then passes through a few MiB of page
/// cache, the same pages freed and taken again, where it would otherwise take fresh memory for all
/// of its length, and push out what other programs cache. On a virtual machine whose free memory
/// goes back to the host, fresh memory costs the host's page faults too (see docs/benchmarks.md).
/// Only a file nothing reads back takes it: a segment's file is hashed from the disk once complete.
///
/// The calls run on a queue of their own: starting write-back does not wait for the disk, but it
/// can wait for the filesystem's journal and the device's queue when the disk is busy, and the
/// writer must not wait with it. Their errors go unreported: the fsync at the end reports any that
/// matter.
final class WriteBack: QueueConfined, @unchecked Sendable {
    // @unchecked: `lastStarted` is touched only on `queue` (assertOnQueue).

    /// Write-back starts each time this much more has been written.
    static let step: Int64 = 8 << 20

    private let fd: Int32
    /// Whether written ranges leave the page cache once on disk.
    let dropsWritten: Bool
    let queue = DispatchQueue(label: "fetchd.transfer.writeback", target: .global(qos: .utility))
    /// Where the range whose write-back started last begins.
    private var lastStarted: Int64?

    init(fd: Int32, dropsWritten: Bool) {
        self.fd = fd
        self.dropsWritten = dropsWritten
    }

    /// Starts write-back of the bytes from `offset` to `end`.
    func start(from offset: Int64, upTo end: Int64) {
        guard end > offset, let syncFileRange = Self.syncFileRange else { return }
        queue.async { [self] in
            assertOnQueue()
            _ = syncFileRange(fd, off_t(offset), off_t(end - offset), Self.startWriting)
            // The range before was started a step ago: its pages are clean by now, or soon.
            if dropsWritten, let earlier = lastStarted, earlier < offset {
                _ = syncFileRange(fd, off_t(earlier), off_t(offset - earlier), Self.waitForWriting)
                _ = posix_fadvise(fd, off_t(earlier), off_t(offset - earlier), POSIX_FADV_DONTNEED)
            }
            lastStarted = offset
        }
    }

    /// Returns once every `start` so far has run, so that the file may be closed.
    func drain() {
        queue.sync {}
    }

    private typealias SyncFileRange = @Sendable @convention(c) (Int32, off_t, off_t, UInt32) -> Int32

    /// SYNC_FILE_RANGE_WRITE, from <linux/fs.h>.
    private static let startWriting: UInt32 = 2
    /// SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER: returns once
    /// the range is on its way to the disk and written.
    private static let waitForWriting: UInt32 = 7

    /// Swift's Glibc module leaves sync_file_range out (glibc declares it only under _GNU_SOURCE),
    /// so it is looked up at run time.
    private static let syncFileRange: SyncFileRange? = {
        guard let program = dlopen(nil, RTLD_NOW), let symbol = dlsym(program, "sync_file_range") else { return nil }
        return unsafeBitCast(symbol, to: SyncFileRange.self)
    }()
}
