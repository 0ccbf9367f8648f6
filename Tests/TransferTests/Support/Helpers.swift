import Crypto
import Foundation
import Logging
import TestSupport
import Transfer

func makeEngine() -> TransferEngine {
    TransferEngine(logger: Logger(label: "transfer-tests"))
}

extension TransferEngine {
    /// Runs one transfer to completion.
    func run(_ request: TransferRequest,
             onProgress: @escaping @Sendable (TransferProgress) -> Void = { _ in }) async -> TransferResult {
        await withCheckedContinuation { continuation in
            _ = start(request, onProgress: onProgress, onComplete: { continuation.resume(returning: $0) })
        }
    }
}

/// A download into `path` from a loopback origin (which the default policy would refuse).
func download(_ url: String, to path: String, validator: String? = nil) -> TransferRequest {
    var request = TransferRequest(url: url, sink: .file(path: path, resumeValidator: validator))
    request.addressPolicy = .allowAll
    return request
}

/// A directory of its own for each test, removed at the end.
final class TemporaryDirectory: Sendable {
    let path: String

    /// A new directory in the system's temporary directory, or in `parent`.
    init(under parent: String? = nil) throws {
        path = (parent.map { $0 + "/" } ?? NSTemporaryDirectory()) + "transfer-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    func file(_ name: String) -> String { path + "/" + name }
}

/// Random bytes from a fast generator seeded at random: the system's generator costs a system
/// call per 8 bytes, which for the many megabytes these tests use kept Swift's few cooperative
/// threads busy long enough to stall every other test in the process.
func randomBytes(_ count: Int) -> [UInt8] {
    var generator = SplitMix64(seed: UInt64.random(in: .min ... .max))
    var bytes = [UInt8](repeating: 0, count: count)
    bytes.withUnsafeMutableBytes { buffer in
        for index in stride(from: 0, to: count - count % 8, by: 8) {
            buffer.storeBytes(of: generator.next() as UInt64, toByteOffset: index, as: UInt64.self)
        }
    }
    for index in (count - count % 8)..<count { bytes[index] = UInt8.random(in: 0...255, using: &generator) }
    return bytes
}

func sha256Hex(_ bytes: [UInt8]) -> String {
    SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
}

func contents(_ path: String) -> [UInt8] {
    FileManager.default.contents(atPath: path).map { Array($0) } ?? []
}

func write(_ bytes: [UInt8], to path: String) {
    _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
}

/// Seconds elapsed while running `body`.
func measure<T>(_ body: () async throws -> T) async rethrows -> (T, Double) {
    let start = DispatchTime.now().uptimeNanoseconds
    let value = try await body()
    return (value, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
}

/// A download into a partial file that already holds `prefix`, as a retry after an interrupted
/// attempt finds it; resumed with `validator` if one is given.
struct PartialFileRun {
    /// Keeps the file until the test is done with it.
    let directory: TemporaryDirectory
    let path: String
    let result: TransferResult
}

func downloadOverPartialFile(_ url: String, holding prefix: [UInt8], validator: String? = nil) async throws -> PartialFileRun {
    let directory = try TemporaryDirectory()
    let path = directory.file("partial")
    write(prefix, to: path)
    let engine = makeEngine()
    defer { engine.shutdown() }
    let result = await engine.run(download(url, to: path, validator: validator))
    return PartialFileRun(directory: directory, path: path, result: result)
}
