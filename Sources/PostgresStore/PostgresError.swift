import Foundation

/// A failed libpq call: what PostgreSQL said, its SQLSTATE code when it gave one, and the SQL
/// that was running (statement text only: parameters can hold job headers, which are secret).
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    public var message: String
    /// The five-character SQLSTATE, e.g. "23505" for a unique violation; nil for connection errors.
    public var sqlState: String?
    public var sql: String?

    /// One line: libpq's messages span several (a hint on the second), and so does the SQL.
    public var description: String {
        guard let sql else { return "PostgreSQL: \(Self.oneLine(message))" }
        return "PostgreSQL: \(Self.oneLine(message)) (in: \(Self.oneLine(sql)))"
    }

    private static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: " ")
    }
}
