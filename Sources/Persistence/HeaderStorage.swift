import DownloadCore
import Foundation

/// How a job's origin headers are kept in a text column: a JSON array, or NULL for none.
public enum HeaderStorage {
    public static func text(_ headers: [OriginHeader]) -> String? {
        JSONArrayColumn.text(headers)
    }

    /// A column that does not decode is a store error: a job must not run without the headers
    /// (credentials, say) it was given.
    public static func headers(_ text: String?) throws -> [OriginHeader] {
        try JSONArrayColumn.items(text)
    }
}

/// A list kept in a text column as a JSON array, or NULL for none (a job's headers, its mirrors).
public enum JSONArrayColumn {
    public static func text<Item: Encodable>(_ items: [Item]) -> String? {
        // Encoding an array of strings or string pairs cannot fail; were it to, the list would be empty.
        guard !items.isEmpty, let data = try? JSONEncoder().encode(items) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// A column that does not decode is a store error.
    public static func items<Item: Decodable>(_ text: String?) throws -> [Item] {
        guard let text else { return [] }
        return try JSONDecoder().decode([Item].self, from: Data(text.utf8))
    }
}
