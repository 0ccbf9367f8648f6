import CZlib

/// Decompresses a whole gzip member, or nil if it is not valid gzip.
func gunzip(_ input: [UInt8]) -> [UInt8]? {
    var stream = z_stream()
    guard fetchd_inflate_init_gzip(&stream) == Z_OK else { return nil }
    defer { inflateEnd(&stream) }
    var output: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    return input.withUnsafeBufferPointer { source -> [UInt8]? in
        stream.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
        stream.avail_in = uInt(source.count)
        while true {
            let (status, produced) = chunk.withUnsafeMutableBufferPointer { buffer in
                stream.next_out = buffer.baseAddress
                stream.avail_out = uInt(buffer.count)
                let status = inflate(&stream, Z_NO_FLUSH)
                return (status, buffer.count - Int(stream.avail_out))
            }
            output += chunk[..<produced]
            if status == Z_STREAM_END { return stream.avail_in == 0 ? output : nil }
            guard status == Z_OK else { return nil }
        }
    }
}
