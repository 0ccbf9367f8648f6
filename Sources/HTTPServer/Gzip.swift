import CZlib

/// One-shot gzip (RFC 1952) of a response body.
enum Gzip {
    /// Level 1: for JSON it gives most of level 6's saving at a fraction of the CPU time, and
    /// the compression runs on the connection's event loop (Benchmarks/README.md has numbers).
    static let level: Int32 = 1

    /// The compressed bytes, or nil if zlib fails.
    static func compress(_ input: [UInt8]) -> [UInt8]? {
        var stream = z_stream()
        guard fetchd_deflate_init_gzip(&stream, level) == Z_OK else { return nil }
        defer { deflateEnd(&stream) }
        // deflateBound covers the gzip wrapper, so one call with Z_FINISH always completes.
        let capacity = Int(deflateBound(&stream, uLong(input.count)))
        var finished = false
        let output = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            input.withUnsafeBufferPointer { source in
                stream.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
                stream.avail_in = uInt(source.count)
                stream.next_out = buffer.baseAddress
                stream.avail_out = uInt(buffer.count)
                finished = deflate(&stream, Z_FINISH) == Z_STREAM_END
            }
            count = finished ? Int(stream.total_out) : 0
        }
        return finished ? output : nil
    }
}
