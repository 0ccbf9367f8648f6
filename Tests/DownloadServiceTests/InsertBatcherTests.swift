import DownloadCore
@testable import DownloadService
import Persistence
import Testing

/// Group commit with regathering (as on PostgreSQL): every job is committed and answered, whether
/// the answered clients come back with more jobs or not.
struct InsertBatcherTests {
    @Test func regatheringCommitsAndAnswersEveryJob() async throws {
        let fixture = try ServiceFixture()
        let batcher = InsertBatcher(store: fixture.store, regather: .milliseconds(2))
        // Waves of concurrent clients, each coming back once with a second job; then one alone.
        for wave in 0..<5 {
            let outcomes = try await withThrowingTaskGroup(of: [InsertOutcome].self) { group in
                for client in 0..<16 {
                    group.addTask {
                        var answered: [InsertOutcome] = []
                        for round in 0..<2 {
                            answered.append(try await batcher.insert(NewJob(download: Self.job("w\(wave)-c\(client)-r\(round)"), idempotency: nil)))
                        }
                        return answered
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(outcomes.count == 32 && outcomes.allSatisfy { if case .created = $0 { true } else { false } })
        }
        #expect(try await batcher.insert(NewJob(download: Self.job("alone"), idempotency: nil)) == .created)
        #expect(try fixture.store.counts()[.queued] == 5 * 32 + 1)
    }

    private static func job(_ name: String) -> Download {
        NewDownload(url: "http://example.com/\(name)", parsedURL: HTTPURL(scheme: "http", host: "example.com", port: 80),
                    destination: Destination(stored: "files/\(name)")).makeDownload(id: name, now: ServiceFixture.start)
    }
}
