import Foundation

/// How a job's mirror URLs are kept in a text column: a JSON array, or NULL for none.
public enum MirrorStorage {
    public static func text(_ urls: [String]) -> String? {
        // Encoding an array of strings cannot fail; were it to, the job would have no mirrors.
        guard !urls.isEmpty, let data = try? JSONEncoder().encode(urls) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// A column that does not decode is a store error, as with headers.
    public static func urls(_ text: String?) throws -> [String] {
        guard let text else { return [] }
        return try JSONDecoder().decode([String].self, from: Data(text.utf8))
    }
}
