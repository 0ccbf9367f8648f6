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
