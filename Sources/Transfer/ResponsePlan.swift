/// What to do with the body of the final response of an attempt, decided once its head is complete.
/// Pure: the resume rules live here and nowhere else.
struct ResponsePlan: Equatable {
    enum Action: Equatable {
        /// Memory sink: keep the body, whatever the status.
        case keepInMemory
        /// File sink, 2xx: append at the resume offset (206), or start the file over.
        case writeFile(startOver: Bool)
        /// File sink, any other status: the body is not the file's content.
        case discard
        /// A 416 saying the partial file is already the whole representation.
        case alreadyComplete
        /// Stop now; `truncate` leaves an empty file so that the next attempt starts clean.
        case fail(TransferFailure, truncate: Bool)
    }

    var action: Action
    /// Total size of the representation, when the response tells.
    var bytesExpected: Int64?

    /// - Parameters:
    ///   - resumeOffset: N when the request carried `Range: bytes=N-`, else nil.
    ///   - isFile: whether the body goes to a file (else to memory).
    ///   - segmentEnd: for one range of a segmented download (which starts at `resumeOffset`), where
    ///     it ends: only a 206 inside the range is taken, and nothing is ever truncated.
    static func decide(
        for head: ResponseHeaders, resumeOffset: Int64?, isFile: Bool, segmentEnd: Int64? = nil, maxBytes: Int64?
    ) -> ResponsePlan {
        guard isFile else {
            return capped(ResponsePlan(action: .keepInMemory, bytesExpected: head.contentLength), maxBytes)
        }
        if let segmentEnd { return segment(head, start: resumeOffset ?? 0, end: segmentEnd) }
        switch head.status {
        case 206:
            // Without a Range header sent, the only acceptable partial response starts at 0.
            let start = resumeOffset ?? 0
            guard case .bytes(let first, _, let total)? = head.contentRange, first == start else {
                let got = head.contentRangeText.map { "'\($0)'" } ?? "no Content-Range"
                return ResponsePlan(
                    action: .fail(.rangeMismatch("asked for bytes \(start)-, got \(got)"), truncate: true),
                    bytesExpected: nil)
            }
            return capped(ResponsePlan(action: .writeFile(startOver: false), bytesExpected: total), maxBytes)
        case 200..<300:
            return capped(ResponsePlan(action: .writeFile(startOver: true), bytesExpected: head.contentLength), maxBytes)
        case 416:
            if let resumeOffset, head.contentRange == .unsatisfied(total: resumeOffset) {
                return ResponsePlan(action: .alreadyComplete, bytesExpected: resumeOffset)
            }
            return ResponsePlan(action: .discard, bytesExpected: nil)
        default:
            return ResponsePlan(action: .discard, bytesExpected: nil)
        }
    }

    /// The rules for one range of a segmented download: the file is shared with the other ranges,
    /// so a response that is not exactly this range's bytes is never written.
    private static func segment(_ head: ResponseHeaders, start: Int64, end: Int64) -> ResponsePlan {
        switch head.status {
        case 206:
            guard case .bytes(let first, let last, let total)? = head.contentRange, first == start, last < end else {
                let got = head.contentRangeText.map { "'\($0)'" } ?? "no Content-Range"
                return ResponsePlan(action: .fail(.rangeMismatch("asked for bytes \(start)-\(end - 1), got \(got)"), truncate: false),
                                    bytesExpected: nil)
            }
            return ResponsePlan(action: .writeFile(startOver: false), bytesExpected: total)
        case 200..<300:
            return ResponsePlan(action: .fail(.rangeMismatch("asked for bytes \(start)-\(end - 1), got a \(head.status)"), truncate: false),
                                bytesExpected: head.contentLength)
        default:
            return ResponsePlan(action: .discard, bytesExpected: nil)
        }
    }

    /// Fails up front when the announced size is already over the cap.
    private static func capped(_ plan: ResponsePlan, _ maxBytes: Int64?) -> ResponsePlan {
        guard let maxBytes, let expected = plan.bytesExpected, expected > maxBytes else { return plan }
        return ResponsePlan(action: .fail(.tooLarge, truncate: false), bytesExpected: expected)
    }
}
