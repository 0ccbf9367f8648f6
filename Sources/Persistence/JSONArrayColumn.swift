import Foundation

/// A list kept in a text column as a JSON array, or NULL for none (a job's headers, its mirrors).
enum JSONArrayColumn {
    /// Keys sorted: the same list always makes the same text, so that a column compared before and
    /// after a change (the claim writes only what differs; a batch logs what differs from its first
    /// job) differs only when the list does.
    static func text<Item: Encodable>(_ items: [Item]) -> String? {
        guard !items.isEmpty else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // Encoding an array of strings or string pairs cannot fail; were it to, the list would be empty.
        guard let data = try? encoder.encode(items) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// A text that does not decode is a store error, whose message says `what` the list is.
    static func items<Item: Decodable>(_ text: String?, of what: String) throws(ColumnProblem) -> [Item] {
        guard let text else { return [] }
        do {
            return try JSONDecoder().decode([Item].self, from: Data(text.utf8))
        } catch {
            throw ColumnProblem(message: "does not hold a JSON array of \(what)")
        }
    }
}
