/// A stored job that cannot be read back: which job, which column, and what is wrong with it.
/// It quotes no headers: they may hold secrets.
public struct UnreadableJob: Error, CustomStringConvertible, Sendable, Equatable {
    /// nil when the id itself could not be read.
    public var id: String?
    public var column: String
    public var problem: String

    public init(id: String?, column: String, problem: String) {
        self.id = id
        self.column = column
        self.problem = problem
    }

    public var description: String {
        "stored job \(id.map { "\"\($0)\"" } ?? "with an unreadable id") cannot be read: column \(column) \(problem)"
    }
}
