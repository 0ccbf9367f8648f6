import Glibc

/// A small file read whole as text: a tokens file, a tus upload's witness.
enum TextFile {
    struct ReadFailure: Error {
        var reason: String
    }

    /// The file's text, or the operating system's reason it cannot be read.
    static func read(_ path: String) throws(ReadFailure) -> String {
        guard let file = fopen(path, "r") else { throw ReadFailure(reason: String(cString: strerror(errno))) }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            bytes += chunk.prefix(count)
            if count < chunk.count { break }
        }
        guard ferror(file) == 0 else { throw ReadFailure(reason: String(cString: strerror(errno))) }
        return String(decoding: bytes, as: UTF8.self)
    }
}
