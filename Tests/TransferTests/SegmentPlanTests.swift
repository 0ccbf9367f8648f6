import Testing
@testable import Transfer

/// What one range of a segmented download does with each answer: the file is shared with the
/// other ranges, so only this range's bytes are ever written and nothing is ever truncated.
@Suite struct SegmentPlanTests {
    private func plan(_ status: Int, _ lines: String..., start: Int64 = 100, end: Int64 = 200) throws -> ResponsePlan {
        var head = try #require(ResponseHeaders(statusLine: "HTTP/1.1 \(status) Whatever"))
        for line in lines { head.add(line: line) }
        return ResponsePlan.decide(for: head, resumeOffset: start, isFile: true, segmentEnd: end, maxBytes: nil)
    }

    @Test func theRangeAskedForIsWritten() throws {
        #expect(try plan(206, "Content-Range: bytes 100-199/1000")
            == ResponsePlan(action: .writeFile(startOver: false), bytesExpected: 1000))
        // Shorter than asked is allowed: the rest is still missing at the end.
        #expect(try plan(206, "Content-Range: bytes 100-149/1000").action == .writeFile(startOver: false))
    }

    @Test func aWholeResponseOrAnotherRangeFailsWithoutTouchingTheFile() throws {
        #expect(try plan(200, "Content-Length: 1000").action
            == .fail(.rangeMismatch("asked for bytes 100-199, got a 200"), truncate: false))
        #expect(try plan(206, "Content-Range: bytes 0-99/1000").action
            == .fail(.rangeMismatch("asked for bytes 100-199, got 'bytes 0-99/1000'"), truncate: false))
        #expect(try plan(206, "Content-Range: bytes 100-299/1000").action
            == .fail(.rangeMismatch("asked for bytes 100-199, got 'bytes 100-299/1000'"), truncate: false))
        #expect(try plan(206).action == .fail(.rangeMismatch("asked for bytes 100-199, got no Content-Range"), truncate: false))
    }

    @Test func errorsAndRangeNotSatisfiableAreDiscarded() throws {
        #expect(try plan(503).action == .discard)
        #expect(try plan(416, "Content-Range: bytes */100").action == .discard)
    }
}
