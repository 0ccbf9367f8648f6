import DownloadCore
import Foundation
import Persistence
import Store
import Testing

/// A `JobStore` implementation the conformance suite runs against, and how to make an empty one.
struct StoreBackend: Sendable, CustomTestStringConvertible {
    let name: String
    let make: @Sendable (_ directory: String) throws -> any JobStore

    var testDescription: String { name }

    static let sqlite = StoreBackend(name: "SQLite") { directory in try SQLiteStore(path: directory + "/fetchd.sqlite") }

    static let all: [StoreBackend] = [.sqlite]

    func scratch() throws -> ScratchStore {
        try ScratchStore(backend: self)
    }
}

/// An empty store of one backend in a fresh temporary directory, removed afterwards.
final class ScratchStore {
    let directory: String
    let store: any JobStore

    init(backend: StoreBackend) throws {
        directory = NSTemporaryDirectory() + "fetchd-conformance-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        store = try backend.make(directory)
    }

    deinit {
        store.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Claims one queued job as `started` through a claim pass that chooses only it.
    func claim(_ started: Download, now: Int64 = 0) throws -> Bool {
        let result = try store.claim(ClaimPass(now: max(now, started.runAt), agedBefore: .max, agingDelay: 0,
                                               candidates: { _ in (limit: 1000, excludingHosts: []) },
                                               choose: { $0.id == started.id ? started : nil }))
        return result.claimed.map(\.id) == [started.id]
    }

    /// The ids a claim pass is offered, in order, lane by lane, claiming none.
    func candidates(now: Int64, agedBefore: Int64 = .min, limit: Int = 10, excludingHosts: [String] = [],
                    lanes: Set<Lane> = Set(Lane.allCases)) throws -> [String] {
        var offered: [String] = []
        _ = try store.claim(ClaimPass(now: now, agedBefore: agedBefore, agingDelay: 86_400_000,
                                      candidates: { lanes.contains($0) ? (limit: limit, excludingHosts: excludingHosts) : nil },
                                      choose: { offered.append($0.id); return nil }))
        return offered
    }
}

func makeDownload(_ id: String, destination: String? = nil, session: String = "default", priority: Double = 0.5,
                  runAt: Int64 = 0, createdAt: Int64 = 0) -> Download {
    var submission = NewDownload(url: "http://example.com/\(id)", parsedURL: HTTPURL(scheme: "http", host: "example.com", port: 80),
                                 destination: Destination(stored: destination ?? "files/\(id)"))
    submission.session = session
    submission.priority = priority
    var download = submission.makeDownload(id: id, now: createdAt)
    download.runAt = runAt
    return download
}
