import DownloadCore
import Testing

/// `mirrors`, `connections` and `maxBytesPerSecond` as submitted and patched, and the stored form
/// of a segmented job's ranges.
extension SubmissionValidatorTests {
    @Test func acceptsTheFields() throws {
        let submission = try validate(#"""
            {"url": "http://a.example/f", "destination": "f", "mirrors": ["https://b.example/f", "http://c.example:81/f"],
             "connections": 16, "maxBytesPerSecond": 1024}
            """#).get()
        #expect(submission.mirrors == ["https://b.example/f", "http://c.example:81/f"])
        #expect(submission.connections == 16 && submission.maxBytesPerSecond == 1024)
        let job = submission.makeDownload(id: "01A", now: 0)
        #expect(job.allURLs == ["http://a.example/f", "https://b.example/f", "http://c.example:81/f"])
        #expect(try validate(#"{"url": "http://a.example/f", "destination": "f"}"#).get().connections == nil)
    }

    @Test(arguments: [
        #""mirrors": "http://b.example/f""#, #""mirrors": ["gopher://b.example/f"]"#, #""mirrors": [1]"#,
        #""mirrors": ["http://1","http://2","http://3","http://4","http://5","http://6","http://7","http://8","http://9"]"#,
        #""connections": 0"#, #""connections": 17"#, #""connections": 2.5"#, #""maxBytesPerSecond": 1023"#,
        #""maxBytesPerSecond": "1MiB""#,
    ])
    func refusesBadValues(_ field: String) throws {
        let name = String(field.dropFirst().prefix { $0 != "\"" })
        #expect(try fields(#"{"url": "http://a.example/f", "destination": "f", \#(field)}"#) == [name])
    }

    @Test func aPatchChangesMirrorsAndTheCapAndRestartsARunningAttempt() throws {
        var job = try validate(#"{"url": "http://a.example/f", "destination": "f", "maxBytesPerSecond": 4096}"#).get()
            .makeDownload(id: "01A", now: 0)
        job.mirrorIndex = 1
        let patch = try JobPatch.parse(try JSONParser.parse(Array(#"{"mirrors": ["http://m.example/f"], "maxBytesPerSecond": null}"#.utf8))).get()
        #expect(patch.changesRequest)
        let changed = try patch.applied(to: job, now: 0).get()
        #expect(changed.mirrors == ["http://m.example/f"] && changed.maxBytesPerSecond == nil)
        #expect(changed.currentURL == "http://m.example/f")
        let cleared = try JobPatch.parse(try JSONParser.parse(Array(#"{"mirrors": null}"#.utf8))).get().applied(to: changed, now: 0).get()
        #expect(cleared.mirrors.isEmpty && cleared.currentURL == "http://a.example/f", "the round wraps to what is left")
    }

    @Test func rangesRoundTripThroughTheirStoredForm() {
        let ranges = [RangeProgress(start: 0, end: 100, next: 42), RangeProgress(start: 100, end: 250, next: 250)]
        #expect(RangeProgress.parse(RangeProgress.text(ranges)) == ranges)
        #expect(RangeProgress.text([]) == nil && RangeProgress.parse(nil).isEmpty)
        #expect(RangeProgress.parse("0-10-11").isEmpty, "progress past the end is not trusted")
        #expect(RangeProgress.parse("garbage").isEmpty)
    }
}
