import DownloadCore
import Testing

@Suite struct JobPatchTests {
    private func parse(_ json: String) throws -> JobPatch {
        try JobPatch.parse(try JSONParser.parse(Array(json.utf8))).get()
    }

    private func errors(_ json: String) throws -> [String] {
        guard case .failure(let failure) = JobPatch.parse(try JSONParser.parse(Array(json.utf8))) else { return [] }
        return failure.errors.map(\.field)
    }

    private func job() -> Download {
        var submission = NewDownload(url: "http://a.example/f", parsedURL: HTTPURL(scheme: "http", host: "a.example", port: 80),
                                     destination: Destination(stored: "f"))
        submission.metadata = #"{"keep":1,"nested":{"x":1,"y":2}}"#
        submission.webhookURL = "http://hooks.example/"
        submission.earliestBeginDate = 10_000
        return submission.makeDownload(id: "01A", now: 0)
    }

    @Test func setsClearsAndMergesAsRFC7396Says() throws {
        let patch = try parse(#"""
            {"url": "https://b.example:8443/g", "priority": 1, "webhookURL": null, "earliestBeginDate": null,
             "metadata": {"nested": {"y": null, "z": [1]}, "added": "v"}, "headers": {"X-A": "1"}}
            """#)
        #expect(patch.changesRequest)
        let changed = try patch.applied(to: job(), now: 500).get()
        #expect(changed.url == "https://b.example:8443/g" && changed.hostKey == "b.example:8443")
        #expect(changed.priority == 1 && changed.webhookURL == nil && changed.earliestBeginDate == nil)
        #expect(changed.metadata == #"{"added":"v","keep":1,"nested":{"x":1,"z":[1]}}"#)
        #expect(changed.headers == [OriginHeader(name: "X-A", value: "1")])
        #expect(changed.runAt == 500, "no date: due now")
    }

    @Test func aNewURLEndsTheWaitForOneAndOtherChangesKeepTheDeadline() throws {
        var waiting = job()
        waiting.earliestBeginDate = nil
        waiting.awaitingURLSince = 100
        waiting.runAt = 86_400_100
        let reprioritized = try parse(#"{"priority": 0.9}"#).applied(to: waiting, now: 200).get()
        #expect(reprioritized.awaitingURLSince == 100 && reprioritized.runAt == 86_400_100)
        let refreshed = try parse(#"{"url": "http://a.example/f?sig=new"}"#).applied(to: waiting, now: 200).get()
        #expect(refreshed.awaitingURLSince == nil && refreshed.runAt == 200)
    }

    @Test func anEmptyPatchChangesNothingButWhenTheJobIsDue() throws {
        let patch = try parse("{}")
        #expect(!patch.changesRequest)
        let original = job()
        #expect(try patch.applied(to: original, now: 0).get() == original)
    }

    @Test func refusesFieldsItCannotChangeAndBadValues() throws {
        #expect(try errors(#"{"destination": "x", "mirrors": "x", "url": null}"#).sorted() == ["destination", "mirrors", "url"])
        #expect(try errors(#"{"priority": "high", "discretionary": 1, "metadata": [], "earliestBeginDate": "soon"}"#).sorted()
            == ["discretionary", "earliestBeginDate", "metadata", "priority"])
        #expect(try errors(#"{"headers": {"Host": "x"}, "webhookURL": "ftp://x"}"#).sorted() == ["headers", "webhookURL"])
    }

    @Test func mergedMetadataIsHeldToTheLimit() throws {
        let patch = try parse(#"{"metadata": {"big": "\#(String(repeating: "v", count: 4090))"}}"#)
        guard case .failure(let failure) = patch.applied(to: job(), now: 0) else {
            Issue.record("a merged metadata over 4 KiB was accepted")
            return
        }
        #expect(failure.errors.map(\.field) == ["metadata"])
    }
}
