import CCurl
import Glibc

/// PEM bytes read once at start, kept at a fixed address for the engine's lifetime so that
/// curl uses them without a copy per transfer (CURL_BLOB_NOCOPY).
final class PEMBlob: @unchecked Sendable {
    // @unchecked: immutable after init. `bytes` (a pointer, so not Sendable) is a `let` whose memory
    // is written only in init and freed only in deinit; curl only reads it. With no later writer
    // there is no confinement to check at run time.
    private let bytes: UnsafeMutableRawBufferPointer

    init(_ contents: [UInt8]) {
        bytes = .allocate(byteCount: contents.count, alignment: 1)
        contents.withUnsafeBytes { bytes.copyMemory(from: $0) }
    }

    deinit { bytes.deallocate() }

    /// Hands the bytes to curl as `option`, one of the *_BLOB options.
    func apply(to handle: UnsafeMutableRawPointer, _ option: CURLoption) -> CURLcode {
        fetchd_easy_setopt_blob(handle, option, bytes.baseAddress, bytes.count)
    }

    /// The whole file, or nil when it cannot be read.
    static func read(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count == 0 { return contents }
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            contents += chunk[..<count]
        }
    }

    static func contains(_ marker: String, in contents: [UInt8]) -> Bool {
        let needle = Array(marker.utf8)
        guard needle.count <= contents.count else { return false }
        return (0...(contents.count - needle.count)).contains { start in
            contents[start..<(start + needle.count)].elementsEqual(needle)
        }
    }
}
