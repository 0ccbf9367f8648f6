import DownloadCore
@testable import DownloadService
import Testing
import TestSupport

/// A POST's 201 is the event log's bytes of the job with the scheduler's reason put in: it must
/// read exactly as the job written with that reason.
@Suite struct DownloadJSONTests {
    @Test(arguments: [nil] + WaitingFor.allCases.map(Optional.some))
    func unplannedBytesShowAReasonAsIfWrittenWithIt(reason: WaitingFor?) {
        var download = makeDownload("01JOB", destination: "a/\"waitingFor\":null.bin", session: "s\"waitingFor\":null")
        download.earliestBeginDate = 4_102_444_800_000
        let unplanned = DownloadJSON.Unplanned(download)
        #expect(unplanned.bytes == DownloadJSON.logged(download))
        #expect(unplanned.showing(reason) == DownloadJSON.encode(download, waitingFor: reason))
    }
}

/// A job's origin headers are part of it as read back, by name only: their values are often
/// credentials, and reach no response, event or webhook.
@Suite struct DownloadHeaderNamesTests {
    @Test func headersShowTheirNamesAsGivenAndNoValue() throws {
        var download = makeDownload("01JOB")
        download.headers = [OriginHeader(name: "Authorization", value: "Bearer value-a1"), OriginHeader(name: "x-Trace", value: "value-b2")]
        let bytes = DownloadJSON.encode(download, waitingFor: nil)
        guard case .object(let fields) = try JSONParser.parse(bytes) else {
            Issue.record("a Download is a JSON object")
            return
        }
        #expect(fields["headers"] == .array([.string("Authorization"), .string("x-Trace")]))
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(!text.contains("value-a1") && !text.contains("value-b2"))
    }

    @Test func aJobWithoutHeadersShowsNone() throws {
        guard case .object(let fields) = try JSONParser.parse(DownloadJSON.logged(makeDownload("01JOB"))) else {
            Issue.record("a Download is a JSON object")
            return
        }
        #expect(fields["headers"] == .array([]))
    }
}
