import Testing
@testable import Transfer

@Suite struct ResponseParsingTests {
    private func head(_ status: Int, _ lines: String...) throws -> ResponseHeaders {
        var head = try #require(ResponseHeaders(statusLine: "HTTP/1.1 \(status) Whatever"))
        for line in lines { head.add(line: line) }
        return head
    }

    @Test func parsesStatusLines() {
        #expect(ResponseHeaders(statusLine: "HTTP/1.1 206 Partial Content")?.status == 206)
        #expect(ResponseHeaders(statusLine: "HTTP/2 200")?.status == 200)
        #expect(ResponseHeaders(statusLine: "HTTP/1.1 20x OK") == nil)
        #expect(ResponseHeaders(statusLine: "ICY 200 OK") == nil)
        #expect(ResponseHeaders(statusLine: "HTTP/1.1  404  Not Found")?.status == 404)
        #expect(ResponseHeaders(statusLine: "HTTP/1.1 +20 OK") == nil)
        #expect(ResponseHeaders(statusLine: "HTTP/1.1 2000 OK") == nil)
        #expect(ResponseHeaders(statusLine: "HTTP/1.1") == nil)
    }

    /// As curl's header callback hands them over: bytes, never made into a string.
    @Test func parsesStatusLinesAsBytes() {
        #expect(ResponseHeaders(statusLine: Array("HTTP/1.1 304 Not Modified".utf8))?.status == 304)
        #expect(ResponseHeaders(statusLine: Array("HTTP/1.1 3O4 Not Modified".utf8)) == nil)
    }

    @Test func collectsTheFieldsTheEngineNeeds() throws {
        let parsed = try head(200, "content-length: 42", "ETag:  \"v1\" ", "Last-Modified: Tue, 15 Nov 1994 08:12:31 GMT",
                              "Location: /next", "X-Other: ignored")
        #expect(parsed.contentLength == 42)
        #expect(parsed.etag == "\"v1\"")
        #expect(parsed.validator == "\"v1\"")
        #expect(parsed.location == "/next")
        #expect(try head(200, "Last-Modified: Tue, 15 Nov 1994 08:12:31 GMT").validator == "Tue, 15 Nov 1994 08:12:31 GMT")
        #expect(try head(200, "Content-Length: -1").contentLength == nil)
    }

    /// Handed over as bytes, as curl does: a field the head reads is read whatever its case, a line
    /// without a colon is ignored, and every field is kept when asked.
    @Test func readsFieldsHandedOverAsBytes() throws {
        var head = try #require(ResponseHeaders(statusLine: "HTTP/1.1 200 OK"))
        for line in ["CONTENT-LENGTH: 42", "Etag: \"v2\"", "X-Other: ignored", "no colon here", "Retry-After: 7"] {
            Array(line.utf8).withUnsafeBytes { head.add(line: $0) }
        }
        #expect(head.contentLength == 42 && head.etag == "\"v2\"" && head.retryAfter() == 7 && head.fields.isEmpty)
        var kept = try #require(ResponseHeaders(statusLine: "HTTP/1.1 206 Partial Content"))
        for line in ["X-Other: kept", "Content-Range: bytes 0-9/10"] {
            Array(line.utf8).withUnsafeBytes { kept.add(line: $0, keeping: true) }
        }
        #expect(kept.fields.map(\.name) == ["x-other", "content-range"])
        #expect(kept.contentRange == .bytes(first: 0, last: 9, total: 10))
    }

    @Test func parsesContentRange() {
        #expect(ContentRange("bytes 0-99/1000") == .bytes(first: 0, last: 99, total: 1000))
        #expect(ContentRange("bytes 100-999/*") == .bytes(first: 100, last: 999, total: nil))
        #expect(ContentRange("bytes */1000") == .unsatisfied(total: 1000))
        #expect(ContentRange("Bytes 5-5/6") == .bytes(first: 5, last: 5, total: 6))
        for bad in ["bytes 0-99/50", "bytes 9-1/100", "bytes */*", "items 0-1/2", "bytes 0-/10", "bytes -5/10", "bytes 1-2"] {
            #expect(ContentRange(bad) == nil, "\(bad)")
        }
    }

    @Test func parsesRetryAfterInBothForms() throws {
        #expect(try head(503, "Retry-After: 120").retryAfter() == 120)
        // 784111777 is Sun, 06 Nov 1994 08:49:37 GMT.
        let date = try head(503, "Retry-After: Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(date.retryAfter(now: 784_111_777 - 30) == 30)
        #expect(date.retryAfter(now: 784_111_777 + 30) == 0)
        #expect(try head(503, "Retry-After: soon").retryAfter() == nil)
        #expect(try head(503).retryAfter() == nil)
    }

    // MARK: - Resume rules

    private func plan(_ head: ResponseHeaders, resumeOffset: Int64? = nil, maxBytes: Int64? = nil) -> ResponsePlan {
        ResponsePlan.decide(for: head, resumeOffset: resumeOffset, isFile: true, maxBytes: maxBytes)
    }

    @Test func partialContentAtTheOffsetAppends() throws {
        let decided = plan(try head(206, "Content-Range: bytes 100-999/1000"), resumeOffset: 100)
        #expect(decided == ResponsePlan(action: .writeFile(startOver: false), bytesExpected: 1000))
    }

    @Test func partialContentElsewhereIsAMismatch() throws {
        let decided = plan(try head(206, "Content-Range: bytes 0-999/1000"), resumeOffset: 100)
        #expect(decided.action == .fail(.rangeMismatch("asked for bytes 100-, got 'bytes 0-999/1000'"), truncate: true))
        let missing = plan(try head(206), resumeOffset: 100)
        #expect(missing.action == .fail(.rangeMismatch("asked for bytes 100-, got no Content-Range"), truncate: true))
    }

    @Test func fullContentStartsOver() throws {
        let decided = plan(try head(200, "Content-Length: 1000"), resumeOffset: 100)
        #expect(decided == ResponsePlan(action: .writeFile(startOver: true), bytesExpected: 1000))
    }

    @Test func rangeNotSatisfiableAtTheFullLengthMeansComplete() throws {
        #expect(plan(try head(416, "Content-Range: bytes */1000"), resumeOffset: 1000).action == .alreadyComplete)
        #expect(plan(try head(416, "Content-Range: bytes */2000"), resumeOffset: 1000).action == .discard)
        #expect(plan(try head(416, "Content-Range: bytes */1000")).action == .discard)
    }

    @Test func errorStatusesAreDiscarded() throws {
        #expect(plan(try head(404, "Content-Length: 10")).action == .discard)
        #expect(plan(try head(500), resumeOffset: 10).action == .discard)
    }

    @Test func announcedSizeOverTheCapFailsAtOnce() throws {
        #expect(plan(try head(200, "Content-Length: 1001"), maxBytes: 1000).action == .fail(.tooLarge, truncate: false))
        #expect(plan(try head(206, "Content-Range: bytes 10-1000/1001"), resumeOffset: 10, maxBytes: 1000).action
                == .fail(.tooLarge, truncate: false))
        #expect(plan(try head(200, "Content-Length: 1000"), maxBytes: 1000).action == .writeFile(startOver: true))
    }

    @Test func memoryKeepsEveryStatus() throws {
        let decided = ResponsePlan.decide(for: try head(500, "Content-Length: 5"), resumeOffset: nil, isFile: false, maxBytes: nil)
        #expect(decided == ResponsePlan(action: .keepInMemory, bytesExpected: 5))
    }
}
