import DownloadCore
import Foundation
import Persistence
@testable import PostgresStore
@testable import SQLiteStore
import TestSupport
import Testing

/// A `JobStore` implementation the conformance suite runs against, and how to make an empty one.
struct StoreBackend: Sendable, CustomTestStringConvertible {
    let name: String
    /// Opens a store in the scratch place named by `directory`, making it if it is new; called again,
    /// another store over the same data (another node, for a shared database).
    let make: @Sendable (_ directory: String) throws -> any JobStore
    /// Removes what `make` made outside the directory, after the store is closed.
    var discard: @Sendable (_ directory: String) -> Void = { _ in }
    /// Runs `sql` on the store's data behind its back, with the schema's CHECKs off: to store what
    /// the store itself never writes (a state it does not know, say).
    let tamper: @Sendable (_ store: any JobStore, _ directory: String, _ sql: String) throws -> Void

    var testDescription: String { name }

    static let sqlite = StoreBackend(name: "SQLite", make: { directory in try SQLiteStore(path: directory + "/fetchd.sqlite") },
                                     tamper: { store, _, sql in
        let store = try #require(store as? SQLiteStore)
        try store.withConnection { db in
            try db.execute("PRAGMA ignore_check_constraints = ON; \(sql); PRAGMA ignore_check_constraints = OFF")
        }
    })

    /// PostgreSQL, when `FETCHD_TEST_DATABASE_URL` names a server (`make test` starts one with
    /// scripts/postgres/test-server.sh): each scratch store gets a schema of its own (a database
    /// each would cost most of a second), dropped afterwards.
    static let postgres: StoreBackend? = ProcessInfo.processInfo.environment["FETCHD_TEST_DATABASE_URL"].map { server in
        @Sendable func schema(_ directory: String) -> String {
            "fetchd_test_" + URL(fileURLWithPath: directory).lastPathComponent.filter { $0.isLetter || $0.isNumber }.lowercased()
        }
        @Sendable func admin(_ sql: String) throws {
            let connection = try PostgresConnection(url: server)
            defer { connection.close() }
            try connection.execute(sql)
        }
        return StoreBackend(name: "PostgreSQL", make: { directory in
            try admin("CREATE SCHEMA IF NOT EXISTS \(schema(directory))")
            let separator = server.contains("?") ? "&" : "?"
            return try PostgresStore(url: server + separator + "options=-csearch_path%3D" + schema(directory))
        }, discard: { directory in
            try? admin("DROP SCHEMA IF EXISTS \(schema(directory)) CASCADE")
        }, tamper: { _, directory, sql in
            try admin("""
                SET search_path TO \(schema(directory)); ALTER TABLE downloads DROP CONSTRAINT IF EXISTS downloads_state_check; \(sql)
                """)
        })
    }

    static let all: [StoreBackend] = [.sqlite] + [postgres].compactMap { $0 }

    func scratch() throws -> ScratchStore {
        try ScratchStore(backend: self)
    }
}

/// An empty store of one backend in a fresh temporary directory, removed afterwards.
final class ScratchStore {
    let directory: String
    let store: any JobStore
    private let backend: StoreBackend
    private var others: [any JobStore] = []

    init(backend: StoreBackend) throws {
        self.backend = backend
        directory = NSTemporaryDirectory() + "fetchd-conformance-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        store = try backend.make(directory)
    }

    /// Another store over the same data, as a second node (or process) would open it; closed with this one.
    func another() throws -> any JobStore {
        let store = try backend.make(directory)
        others.append(store)
        return store
    }

    deinit {
        store.close()
        for other in others { other.close() }
        backend.discard(directory)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs `sql` on the store's data behind its back (`StoreBackend.tamper`).
    func tamper(_ sql: String) throws {
        try backend.tamper(store, directory, sql)
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
