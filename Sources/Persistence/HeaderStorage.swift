import DownloadCore
import Foundation

/// How a job's origin headers are kept in a text column: a JSON array, or NULL for none.
public enum HeaderStorage {
    public static func text(_ headers: [OriginHeader]) -> String? {
        // Encoding an array of string pairs cannot fail; were it to, the job would have no headers.
        guard !headers.isEmpty, let data = try? JSONEncoder().encode(headers) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// A column that does not decode is a store error: a job must not run without the headers
    /// (credentials, say) it was given.
    public static func headers(_ text: String?) throws -> [OriginHeader] {
        guard let text else { return [] }
        return try JSONDecoder().decode([OriginHeader].self, from: Data(text.utf8))
    }
}
