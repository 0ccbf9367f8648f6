import Crypto
import Foundation
import Synchronization
import Testing
@testable import Transfer

/// Not a test: prints how closely the engine holds a cap over 10 s windows while transfers come
/// and go and the cap changes (`make bench` runs it via Benchmarks/bandwidth_accuracy.py).
/// Runs only with FETCHD_BANDWIDTH_REPORT=1; takes 40 s.
@Suite struct BandwidthAccuracyReport {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["FETCHD_BANDWIDTH_REPORT"] == "1"))
    func printTheRateOverTenSecondWindows() async throws {
        let body = randomBytes(96 << 20)
        let origin = try TestOrigin { .resource(body, etag: "\"v\"", for: $0) }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let engine = makeEngine()
        defer { engine.shutdown() }
        let mib: Int64 = 1 << 20
        let onDisk = Mutex<[String: Int64]>([:])
        func start(_ name: String, ownCap: Int64? = nil) -> TransferID {
            var request = download(origin.url("/\(name)"), to: directory.file(name))
            request.maxSpeedBytesPerSecond = ownCap
            return engine.start(request, onProgress: { progress in
                onDisk.withLock { $0[name] = progress.bytesOnDisk }
            }, onComplete: { result in
                onDisk.withLock { $0[name] = result.bytesOnDisk }
            })
        }

        // The plan: (second, what happens, the cap from then on).
        engine.setBandwidthLimit(bytesPerSecond: 4 * mib)
        var caps: [(from: Double, cap: Int64)] = [(0, 4 * mib)]
        _ = start("a")
        _ = start("b")
        let leaving = start("c")
        var samples: [(Double, Int64)] = []
        let begin = DispatchTime.now().uptimeNanoseconds
        var step = 0
        while true {
            try await Task.sleep(for: .milliseconds(250))
            let now = Double(DispatchTime.now().uptimeNanoseconds - begin) / 1e9
            samples.append((now, onDisk.withLock { $0.values.reduce(0, +) }))
            if step == 0, now >= 12 { engine.cancel(leaving); step = 1 }
            if step == 1, now >= 18 { _ = start("d", ownCap: 512 * 1024); step = 2 }
            if step == 2, now >= 25 { engine.setBandwidthLimit(bytesPerSecond: 2 * mib); caps.append((25, 2 * mib)); step = 3 }
            if now >= 45 { break }
        }

        print("bandwidth report: second, MiB/s over the second before")
        for index in samples.indices where index >= 4 && index % 4 == 0 {
            let (time, bytes) = samples[index]
            let rate = Double(bytes - samples[index - 4].1) / (time - samples[index - 4].0) / Double(mib)
            print(String(format: "  %5.1f  %6.3f", time, rate))
        }
        print("bandwidth report: 10 s windows (start, end, MiB/s, cap MiB/s, rate/cap)")
        for window in stride(from: 0.0, through: 35.0, by: 1.0) {
            guard let cap = caps.last(where: { $0.from <= window })?.cap,
                  caps.allSatisfy({ $0.from <= window || $0.from >= window + 10 }),
                  let first = samples.first(where: { $0.0 >= window }),
                  let last = samples.last(where: { $0.0 <= window + 10 }), last.0 > first.0
            else { continue }
            let rate = Double(last.1 - first.1) / (last.0 - first.0)
            print(String(format: "  %5.1f %5.1f  %6.3f  %5.2f  %5.3f", first.0, last.0, rate / Double(mib),
                         Double(cap) / Double(mib), rate / Double(cap)))
        }
    }
}

/// Not a test: prints what reading a finished segmented file back to hash it costs (the digest of
/// a segmented download), beside hashing the same bytes from memory. Runs only with
/// FETCHD_DIGEST_REPORT=1; writes a 1 GiB file to the temporary directory.
@Suite struct SegmentedDigestReport {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["FETCHD_DIGEST_REPORT"] == "1"))
    func printTheCostOfHashingTheFinishedFile() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("big")
        let block = randomBytes(8 << 20)
        let handle = try #require(FileHandle(forWritingAtPath: path) ?? {
            write([], to: path)
            return FileHandle(forWritingAtPath: path)
        }())
        for _ in 0..<128 { handle.write(Data(block)) }
        try handle.synchronize()
        try handle.close()

        let (digests, readBack) = await measure { FileHash.digests(ofFileAt: path, extra: nil) }
        let (_, withSHA512) = await measure { FileHash.digests(ofFileAt: path, extra: .sha512) }
        #expect((try? digests.get()) != nil)
        let (_, memorySHA512) = await measure {
            var hasher = ExtraHasher(.sha512)
            block.withUnsafeBytes { bytes in for _ in 0..<128 { hasher?.update(bytes) } }
            return hasher?.finalize()
        }
        let (_, directSHA512) = await measure {
            var hasher = SHA512()
            block.withUnsafeBytes { bytes in for _ in 0..<128 { hasher.update(bufferPointer: bytes) } }
            return hasher.finalize()
        }
        print(String(format: "digest report: 1 GiB SHA-512 from memory: %.2f s (swift-crypto directly: %.2f s)", memorySHA512, directSHA512))
        print(String(format: "digest report: 1 GiB read back and hashed: SHA-256 %.2f s (%.0f MiB/s), SHA-256 + SHA-512 %.2f s",
                     readBack, 1024 / readBack, withSHA512))
    }
}
