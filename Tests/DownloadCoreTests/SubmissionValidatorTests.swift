import DownloadCore
import Foundation
import Testing

@Suite struct SubmissionValidatorTests {
    func validate(_ json: String) throws -> Result<NewDownload, FieldErrors> {
        SubmissionValidator.validate(try JSONParser.parse(Array(json.utf8)))
    }

    func fields(_ json: String) throws -> [String] {
        guard case .failure(let failure) = try validate(json) else { return [] }
        return failure.errors.map(\.field)
    }

    @Test func acceptsAFullSubmission() throws {
        let result = try validate("""
            {"url":"https://example.com:8443/big.iso","destination":"isos/big.iso","session":"nightly-1",
             "earliestBeginDate":"2026-11-21T10:00:00Z","discretionary":true,"priority":1,"expectedBytesToSend":0,
             "expectedBytesToReceive":524288,"webhookURL":"http://hooks.example/x","headers":{"Authorization":"Bearer x"},
             "sha256":"\(String(repeating: "AB", count: 32))","overwrite":true}
            """)
        let submission = try result.get()
        #expect(submission.parsedURL.hostKey == "example.com:8443")
        #expect(submission.priority == 1.0)
        #expect(submission.earliestBeginDate == 1_795_255_200_000)
        #expect(submission.sha256 == String(repeating: "ab", count: 32))
        #expect(submission.headers == [OriginHeader(name: "Authorization", value: "Bearer x")])
    }

    @Test func defaults() throws {
        let submission = try validate(#"{"url":"http://example.com/a","destination":"a"}"#).get()
        #expect(submission.session == "default")
        #expect(submission.priority == 0.5)
        #expect(!submission.discretionary && !submission.overwrite)
        #expect(submission.parsedURL.hostKey == "example.com:80")
    }

    @Test(arguments: [
        (#"{"destination":"a"}"#, "url"),
        (#"{"url":"gopher://example.com/a","destination":"a"}"#, "url"),
        (#"{"url":"file:///etc/passwd","destination":"a"}"#, "url"),
        (#"{"url":"javascript:alert(1)","destination":"a"}"#, "url"),
        (#"{"url":"/relative","destination":"a"}"#, "url"),
        (#"{"url":"http:///nohost","destination":"a"}"#, "url"),
        (#"{"url":"http://exa mple.com/","destination":"a"}"#, "url"),
        (#"{"url":"http://example.com:99999/","destination":"a"}"#, "url"),
        (#"{"url":42,"destination":"a"}"#, "url"),
        (#"{"url":"http://e.com/a"}"#, "destination"),
        (#"{"url":"http://e.com/a","destination":"/etc/passwd"}"#, "destination"),
        (#"{"url":"http://e.com/a","destination":"a/../../b"}"#, "destination"),
        (#"{"url":"http://e.com/a","destination":"a/./b"}"#, "destination"),
        (#"{"url":"http://e.com/a","destination":"a//b"}"#, "destination"),
        (#"{"url":"http://e.com/a","destination":"dir//"}"#, "destination"),
        (#"{"url":"http://e.com/a","destination":"a\u0000b"}"#, "destination"),
        (#"{"url":"http://e.com/a","destination":"a\nb"}"#, "destination"),
        (#"{"url":"http://e.com/a","destination":"a\\..\\b"}"#, "destination"),
        (#"{"url":"http://e.com/a","destination":"evil\u202Etxt.exe"}"#, "destination"),
        (#"{"url":"http://e.com/a","destination":".fetchd-x.tmp"}"#, "destination"),
        (#"{"url":"http://e.com/a","destination":"a","session":"no spaces"}"#, "session"),
        (#"{"url":"http://e.com/a","destination":"a","session":""}"#, "session"),
        (#"{"url":"http://e.com/a","destination":"a","earliestBeginDate":"tomorrow"}"#, "earliestBeginDate"),
        (#"{"url":"http://e.com/a","destination":"a","discretionary":"yes"}"#, "discretionary"),
        (#"{"url":"http://e.com/a","destination":"a","overwrite":1}"#, "overwrite"),
        (#"{"url":"http://e.com/a","destination":"a","priority":1.5}"#, "priority"),
        (#"{"url":"http://e.com/a","destination":"a","priority":"high"}"#, "priority"),
        (#"{"url":"http://e.com/a","destination":"a","expectedBytesToReceive":-1}"#, "expectedBytesToReceive"),
        (#"{"url":"http://e.com/a","destination":"a","expectedBytesToSend":1.5}"#, "expectedBytesToSend"),
        (#"{"url":"http://e.com/a","destination":"a","webhookURL":"ftp://x/"}"#, "webhookURL"),
        (#"{"url":"http://e.com/a","destination":"a","headers":{"X":"a\r\nInjected: 1"}}"#, "headers"),
        (#"{"url":"http://e.com/a","destination":"a","headers":{"Host":"other"}}"#, "headers"),
        (#"{"url":"http://e.com/a","destination":"a","headers":{"Range":"bytes=0-"}}"#, "headers"),
        (#"{"url":"http://e.com/a","destination":"a","headers":{"Bad Name":"x"}}"#, "headers"),
        (#"{"url":"http://e.com/a","destination":"a","headers":["X"]}"#, "headers"),
        (#"{"url":"http://e.com/a","destination":"a","sha256":"abc"}"#, "sha256"),
        (#"{"url":"http://e.com/a","destination":"a","destinaton":"typo"}"#, "destinaton"),
    ])
    func rejects(json: String, field: String) throws {
        #expect(try fields(json).contains(field))
    }

    @Test func reportsEveryBadFieldAtOnce() throws {
        #expect(try Set(fields(#"{"url":"gopher://x/","destination":"/abs","priority":7}"#)) == ["url", "destination", "priority"])
    }

    @Test func aBodyThatIsNotAnObjectIsRejected() throws {
        #expect(try fields("[1,2]") == [""])
    }

    @Test func headerValuesAreNeverEchoedInMessages() throws {
        guard case .failure(let failure) = try validate(#"{"url":"http://e.com/a","destination":"a","headers":{"X-Token":"s3cret\r\n"}}"#) else {
            Issue.record("expected a failure")
            return
        }
        #expect(!failure.errors.contains { $0.message.contains("s3cret") })
    }
}
