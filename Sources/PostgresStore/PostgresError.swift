import Foundation

/// A failed libpq call: what PostgreSQL said, its SQLSTATE code when it gave one, and the SQL
/// that was running (statement text only: parameters can hold job headers, which are secret).
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    public var message: String
    /// The five-character SQLSTATE, e.g. "23505" for a unique violation; nil for connection errors.
    public var sqlState: String?
    public var sql: String?

    public var description: String {
        let what = message.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let sql else { return "PostgreSQL: \(what)" }
        return "PostgreSQL: \(what) (in: \(sql.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")))"
    }
}
