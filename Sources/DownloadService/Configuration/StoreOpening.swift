import HTTPServer
import Logging
import Persistence
import PostgresStore
import SQLiteStore

extension DownloadService {
    /// The store the configuration asks for: PostgreSQL with FETCHD_DATABASE_URL, else SQLite in the
    /// data directory. A read connection per event loop and one more, so reads never queue behind each other.
    static func openStore(_ configuration: Configuration, logger: Logger) throws -> any JobStore {
        let readers = HTTPServer.eventLoopCount + 1
        guard let url = configuration.databaseURL else {
            do {
                return try SQLiteStore(path: configuration.databasePath, readers: readers, statePayload: DownloadJSON.logged,
                                       checkpointProblems: { problem in logCheckpointProblem(problem, logger: logger) })
            } catch {
                throw Configuration.Invalid(description: "FETCHD_DATA_DIR (--data-dir) \(configuration.dataDirectory): the database cannot be used: \(error)")
            }
        }
        do {
            let store = try PostgresStore(url: url, readers: readers, node: configuration.nodeName, statePayload: DownloadJSON.logged)
            logger.info("state in PostgreSQL", metadata: ["node": "\(configuration.nodeName)"])
            return store
        } catch {
            throw Configuration.Invalid(description: "cannot use FETCHD_DATABASE_URL (--database-url): \(error)")
        }
    }

    /// A warning, not an error: nothing is lost yet, but a log that is not copied back or started
    /// over grows until the disk is full, and reads slow down as it does.
    private static func logCheckpointProblem(_ problem: CheckpointProblem, logger: Logger) {
        switch problem {
        case .failed(let mode, let error):
            logger.warning("database checkpoint failed", metadata: ["checkpoint.mode": "\(mode)", "error": "\(error)"])
        case .logGrowing(let pages):
            logger.warning("database write-ahead log keeps growing: a reader keeps it from starting over",
                           metadata: ["wal.pages": "\(pages)"])
        }
    }
}
