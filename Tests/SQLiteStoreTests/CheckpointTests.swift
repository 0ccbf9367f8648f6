import CSQLite
import DownloadCore
import Foundation
import Persistence
@testable import SQLiteStore
import Synchronization
import TestSupport
import Testing

@Suite struct CheckpointTests {
    /// A read transaction left open on another connection keeps every restart busy, so the log
    /// grows past `Checkpointer.growthReported` pages: that is reported, and only once while it
    /// grows to one and a half times that (a checkpoint runs every 1,000 pages of it).
    @Test func aLogThatReadersKeepFromStartingOverIsReportedOnce() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/fetchd.sqlite"
        // A database made with 512-byte pages, which the store keeps: the log reaches
        // `growthReported` pages in a few MB rather than in a hundred.
        let pageSize = 512
        var reader: OpaquePointer?
        try #require(sqlite3_open(path, &reader) == SQLITE_OK)
        defer { sqlite3_close(reader) }
        try #require(sqlite3_exec(reader, "PRAGMA page_size = \(pageSize); PRAGMA journal_mode = WAL", nil, nil, nil) == SQLITE_OK)

        let problems = Mutex<[CheckpointProblem]>([])
        let store = try SQLiteStore(path: path, checkpointProblems: { problem in problems.withLock { $0.append(problem) } })
        defer { store.close() }
        // Its snapshot keeps every frame written from here on in the log.
        try #require(sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM downloads", nil, nil, nil) == SQLITE_OK)

        func growthReports() -> [Int] {
            problems.withLock { problems in
                problems.compactMap { problem in
                    guard case .logGrowing(let pages) = problem else { return nil }
                    return pages
                }
            }
        }
        func logPages() throws -> Int {
            // The log's header is 32 bytes, each frame's 24 more than its page.
            let size = try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int ?? 0
            return max(0, size - 32) / (pageSize + 24)
        }
        let metadata = String(repeating: "m", count: 3000)
        var batch = 0
        // On until the first report and one and a half times its threshold, short of the next (twice).
        while try logPages() < Checkpointer.growthReported * 3 / 2 || growthReports().isEmpty,
              try logPages() < Checkpointer.growthReported * 19 / 10 {
            let jobs = (0..<50).map { index in
                var job = makeDownload(String(format: "%04d-%02d", batch, index))
                job.metadata = metadata
                return NewJob(download: job, idempotency: nil)
            }
            _ = try store.insert(jobs)
            batch += 1
        }
        #expect(sqlite3_exec(reader, "COMMIT", nil, nil, nil) == SQLITE_OK)
        // Waits for the checkpoint under way, whose report would come after the counting below.
        store.close()

        let reports = growthReports()
        #expect(reports.count == 1, "reported at \(reports) pages")
        #expect(reports.allSatisfy { $0 >= Checkpointer.growthReported })
        #expect(problems.withLock { $0.count } == reports.count, "a checkpoint failed: \(problems.withLock { $0 })")
    }
}
