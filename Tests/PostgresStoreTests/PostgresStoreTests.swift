import DownloadCore
import Foundation
import Persistence
@testable import PostgresStore
import Testing

/// The server `make test` starts (scripts/postgres/test-server.sh); without it these tests do not run.
let server = ProcessInfo.processInfo.environment["FETCHD_TEST_DATABASE_URL"]

/// A schema of its own on the test server, dropped afterwards, and the URL of a connection that uses it.
final class ScratchSchema {
    let name = "fetchd_pg_" + UUID().uuidString.filter { $0.isLetter || $0.isNumber }.lowercased()
    let admin: PostgresConnection

    init() throws {
        admin = try PostgresConnection(url: server ?? "")
        try admin.execute("CREATE SCHEMA \(name)")
    }

    /// `application_name` tells this test's connections apart from every other test's on the server.
    var url: String {
        (server ?? "") + ((server ?? "").contains("?") ? "&" : "?") + "options=-csearch_path%3D\(name)&application_name=\(name)"
    }

    deinit {
        try? admin.execute("DROP SCHEMA \(name) CASCADE")
        admin.close()
    }
}

/// What only the PostgreSQL backend has: its schema's checks, its migrations, its errors, its connections.
@Suite(.enabled(if: server != nil, "FETCHD_TEST_DATABASE_URL is not set (make test sets it)"))
struct PostgresStoreTests {
    @Test func theStateColumnRejectsUnknownStates() throws {
        let schema = try ScratchSchema()
        let store = try PostgresStore(url: schema.url)
        defer { store.close() }
        _ = try store.insert(Download.sample("01A"), idempotency: nil)
        #expect {
            try schema.admin.execute("UPDATE \(schema.name).downloads SET state = 'exploded'")
        } throws: { error in
            (error as? PostgresError)?.sqlState == "23514"  // check_violation
        }
    }

    @Test func aDatabaseFromANewerFetchdIsRefused() throws {
        let schema = try ScratchSchema()
        try PostgresStore(url: schema.url).close()
        try schema.admin.execute("UPDATE \(schema.name).schema_version SET version = 999")
        #expect {
            try PostgresStore(url: schema.url)
        } throws: { error in
            "\(error)".contains("newer fetchd")
        }
    }

    /// Errors name the statement and say what PostgreSQL said, on one line, without the parameters.
    @Test func anErrorCarriesTheStatementAndTheServersMessage() throws {
        let schema = try ScratchSchema()
        let connection = try PostgresConnection(url: schema.url)
        defer { connection.close() }
        #expect {
            try connection.run("INSERT INTO nowhere (secret) VALUES ($1)", [.text("the-secret-value")])
        } throws: { error in
            let text = "\(error)"
            return (error as? PostgresError)?.sqlState == "42P01" && text.contains("nowhere") && text.contains("INSERT INTO nowhere")
                && !text.contains("the-secret-value") && !text.contains("\n")
        }
    }

    /// Connections the server dropped (a restart, a failover) are made again by the call that
    /// finds them gone: a read runs again, a write's transaction begins again.
    @Test func droppedConnectionsAreMadeAgain() throws {
        let schema = try ScratchSchema()
        let store = try PostgresStore(url: schema.url, readers: 1)
        defer { store.close() }
        _ = try store.insert(Download.sample("01A"), idempotency: nil)
        let dropped = try schema.admin.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [.text(schema.name)]) { $0.bool(0) }
        // The writer, the reader and the node's own (its lock and heartbeat).
        #expect(dropped == [true, true, true])
        #expect(try store.renewLease())
        #expect(try store.download(id: "01A")?.id == "01A")
        #expect(try store.insert(Download.sample("01C"), idempotency: nil) == .created)
        #expect(store.isWritable())
    }

    /// A transaction's BEGIN goes with its first statement and its COMMIT with the statements
    /// given `atCommit`, in one round trip each: a failure in either place rolls back all of it,
    /// says what failed, and leaves the connection usable.
    @Test func aTransactionSentWithItsBeginAndCommitIsAllOrNothing() throws {
        let schema = try ScratchSchema()
        let connection = try PostgresConnection(url: schema.url)
        defer { connection.close() }
        try connection.execute("CREATE TABLE t (n integer PRIMARY KEY)")
        #expect(throws: PostgresError.self) {
            try connection.transaction { try connection.run("INSERT INTO t (n) VALUES ($1), ($1)", [.integer(1)]) }
        }
        #expect {
            try connection.transaction {
                try connection.run("INSERT INTO t (n) VALUES ($1)", [.integer(2)])
                try connection.atCommit("INSERT INTO t (n) VALUES ($1)", [.integer(3)])
                try connection.atCommit("INSERT INTO t (n) VALUES ($1)", [.integer(2)])
            }
        } throws: { error in
            (error as? PostgresError)?.isUniqueViolation == true && "\(error)".contains("INSERT INTO t")
        }
        try connection.transaction {
            try connection.run("INSERT INTO t (n) VALUES ($1)", [.integer(4)])
            try connection.atCommit("INSERT INTO t (n) VALUES ($1)", [.integer(5)])
        }
        #expect(try connection.query("SELECT n FROM t ORDER BY n") { $0.int(0) } == [4, 5])
    }

    @Test func bytesAndTextRoundTripExactly() throws {
        let schema = try ScratchSchema()
        let connection = try PostgresConnection(url: schema.url)
        defer { connection.close() }
        let bytes: [UInt8] = [0, 1, 0x7f, 0x80, 0xff, 0x5c, 0x78]
        let text = "quote \" backslash \\ comma , brace { é 😀"
        let row = try connection.query("SELECT $1::bytea, $2::text, ($3::text[])[2], $4::bytea", [.bytes(bytes), .text(text), .textArray(["a", text]), .bytes([])]) {
            ($0.bytes(0), $0.string(1), $0.string(2), $0.bytes(3))
        }.first
        #expect(row?.0 == bytes)
        #expect(row?.1 == text)
        #expect(row?.2 == text)
        #expect(row?.3 == [])
    }
}

extension Download {
    static func sample(_ id: String) -> Download {
        NewDownload(url: "http://example.com/\(id)", parsedURL: HTTPURL(scheme: "http", host: "example.com", port: 80),
                    destination: Destination(stored: "files/\(id)")).makeDownload(id: id, now: 0)
    }
}
