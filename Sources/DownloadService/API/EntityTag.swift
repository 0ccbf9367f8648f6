import DownloadCore
import Foundation

/// The strong entity tag of a Download, and `If-Match` (RFC 9110 §13.1.1) against it.
enum EntityTag {
    static func of(_ download: Download) -> String { "\"\(download.revision)\"" }

    /// True when `ifMatch` (`*` or a list of entity tags) names the job's current tag. A weak tag
    /// never matches: If-Match compares strongly.
    static func matches(_ ifMatch: String, _ download: Download) -> Bool {
        let current = of(download)
        return ifMatch.split(separator: ",").contains { candidate in
            let tag = candidate.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == current
        }
    }
}
