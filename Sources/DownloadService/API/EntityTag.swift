import DownloadCore
import Foundation

/// The strong entity tag of a Download, and `If-Match` (RFC 9110 §13.1.1) against it.
enum EntityTag {
    static func of(_ download: Download) -> String { of(revision: download.revision) }

    /// The tag of anything kept with a revision that every stored change moves on (a watch).
    static func of(revision: Int64) -> String { "\"\(revision)\"" }

    /// True when `ifMatch` (`*` or a list of entity tags) names the job's current tag. A weak tag
    /// never matches: If-Match compares strongly.
    static func matches(_ ifMatch: String, _ download: Download) -> Bool {
        matches(ifMatch, revision: download.revision)
    }

    static func matches(_ ifMatch: String, revision: Int64) -> Bool {
        let current = of(revision: revision)
        return ifMatch.split(separator: ",").contains { candidate in
            let tag = candidate.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == current
        }
    }
}
