import Dispatch
import Glibc

/// Turns SIGTERM, SIGINT and SIGHUP into work on a Dispatch queue without losing any. The C
/// handler is installed at once with sigaction and only writes the signal's number to a pipe;
/// Dispatch reads the pipe. (A Dispatch signal source installs its handler asynchronously, and a
/// signal arriving before that, while the signal was ignored, was lost: fetchd then never stopped.)
enum SignalPipe {
    /// (read end, write end), made once.
    static let descriptors: (read: Int32, write: Int32) = {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return (-1, -1) }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        return (fds[0], fds[1])
    }()

    /// Starts delivering the signals to `handler` on `queue`; returns the source to keep alive.
    static func deliver(_ signals: [Int32], on queue: DispatchQueue,
                        to handler: @escaping @Sendable (Int32) -> Void) -> DispatchSourceRead {
        let (readEnd, _) = descriptors
        let source = DispatchSource.makeReadSource(fileDescriptor: readEnd, queue: queue)
        source.setEventHandler {
            var numbers = [UInt8](repeating: 0, count: 16)
            while true {
                let count = numbers.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                guard count > 0 else { return }
                numbers[..<count].forEach { handler(Int32($0)) }
            }
        }
        source.resume()
        for number in signals {
            _ = signal(number) { received in
                var byte = UInt8(truncatingIfNeeded: received)
                _ = write(SignalPipe.descriptors.write, &byte, 1)
            }
        }
        return source
    }
}
