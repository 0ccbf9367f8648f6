/// A body's fields, each name taken once. Most of the names asked for are absent from a body (it
/// names a few of twenty fields): once every field it has was taken, the rest are known absent
/// without hashing their names. (A struct, not a closure over a counter: the closure's captured
/// counter cost an exclusivity check on every name asked for.)
struct BodyFields {
    let all: [String: JSONValue]
    /// How many of the body's fields have not been taken: those left at the end are unknown.
    private(set) var unread: Int

    init(_ all: [String: JSONValue]) {
        self.all = all
        unread = all.count
    }

    mutating func take(_ name: String) -> JSONValue? {
        guard unread > 0, let value = all[name] else { return nil }
        unread -= 1
        return value
    }

    /// Once every name in `known` was taken: an error for each field of the body left, in order.
    func unknown(_ known: Set<String>) -> [FieldError] {
        guard unread > 0 else { return [] }
        return all.keys.sortedByUTF8().filter { !known.contains($0) }.map { FieldError(field: $0, message: "unknown field") }
    }
}
