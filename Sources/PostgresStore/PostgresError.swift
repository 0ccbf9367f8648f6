import Foundation

/// A failed libpq call: what PostgreSQL said, its SQLSTATE code when it gave one, and the SQL
/// that was running (statement text only: parameters can hold job headers, which are secret).
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    public var message: String
    /// The five-character SQLSTATE, e.g. "23505" for a unique violation; nil for connection errors.
    public var sqlState: String?
    public var sql: String?

    /// The server is gone or dropped this session: a libpq error of its own (no SQLSTATE), a
    /// connection exception (class 08), or a shutdown or terminated backend (57P01–57P03).
    var isConnectionLoss: Bool {
        guard let sqlState else { return true }
        return sqlState.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(sqlState)
    }

    /// A unique index refused the row (SQLSTATE 23505).
    var isUniqueViolation: Bool { sqlState == "23505" }

    /// One line: libpq's messages span several (a hint on the second), and so does the SQL.
    public var description: String {
        guard let sql else { return "PostgreSQL: \(Self.oneLine(message))" }
        return "PostgreSQL: \(Self.oneLine(message)) (in: \(Self.oneLine(sql)))"
    }

    private static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: " ")
    }
}
