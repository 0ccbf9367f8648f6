import DownloadCore
import Testing

/// An upload's plan as the store keeps it, and the reply it keeps of the server's answer.
@Suite struct UploadPlanTests {
    func destination(_ path: String) throws -> Destination { try Destination.parse(path).get() }

    @Test func aPlanRoundTripsThroughItsText() throws {
        let plain = UploadPlan(source: try destination("exports/2026-12.csv"), pin: SourcePin(size: 1_048_576, modifiedAt: 1_764_900_000_123_456_789))
        #expect(UploadPlan.parse(plain.text) == plain)

        let everything = UploadPlan(
            source: try destination("logs/a \"quoted\" name.log"), method: .post, uploadProtocol: .tus, contentType: "text/plain; charset=utf-8",
            deleteSource: true, replyDestination: try destination("replies/a.json"), pin: SourcePin(size: 0, modifiedAt: 0),
            reply: UploadReply(status: 201, contentType: "application/json", location: "https://up.example/files/7", etag: "\"e1\"",
                               body: "{\"id\":7}\n"))
        #expect(UploadPlan.parse(everything.text) == everything)
        #expect(UploadPlan.parse(everything.text)?.reply?.body == "{\"id\":7}\n")
    }

    @Test(arguments: [
        "", "null", "[]", "{}",
        // A source that is no file under the root: a directory, an object, an absolute path, an escape.
        #"{"source":"dir/","method":"PUT","protocol":"plain","contentType":"a/b","deleteSource":false,"size":1,"modifiedAt":1}"#,
        #"{"source":"s3://bucket/key","method":"PUT","protocol":"plain","contentType":"a/b","deleteSource":false,"size":1,"modifiedAt":1}"#,
        #"{"source":"/etc/passwd","method":"PUT","protocol":"plain","contentType":"a/b","deleteSource":false,"size":1,"modifiedAt":1}"#,
        #"{"source":"../x","method":"PUT","protocol":"plain","contentType":"a/b","deleteSource":false,"size":1,"modifiedAt":1}"#,
        // A method, protocol or field of the wrong kind; a reply without a status.
        #"{"source":"x","method":"PATCH","protocol":"plain","contentType":"a/b","deleteSource":false,"size":1,"modifiedAt":1}"#,
        #"{"source":"x","method":"PUT","protocol":"s3","contentType":"a/b","deleteSource":false,"size":1,"modifiedAt":1}"#,
        #"{"source":"x","method":"PUT","protocol":"plain","contentType":"a/b","deleteSource":"no","size":1,"modifiedAt":1}"#,
        #"{"source":"x","method":"PUT","protocol":"plain","contentType":"a/b","deleteSource":false,"size":1}"#,
        #"{"source":"x","method":"PUT","protocol":"plain","contentType":"a/b","deleteSource":false,"size":1,"modifiedAt":1,"replyDestination":7}"#,
        #"{"source":"x","method":"PUT","protocol":"plain","contentType":"a/b","deleteSource":false,"size":1,"modifiedAt":1,"reply":{"body":"x"}}"#,
        #"{"source":"x","method":"PUT","protocol":"plain","contentType":"a/b","deleteSource":false,"size":1,"modifiedAt":1,"reply":{"status":42}}"#,
    ])
    func anythingElseIsNoPlan(_ text: String) {
        #expect(UploadPlan.parse(text) == nil)
    }

    @Test func theTextNamesTheSourceAndItsPin() throws {
        let plan = UploadPlan(source: try destination("a/b.bin"), pin: SourcePin(size: 5, modifiedAt: 6))
        #expect(plan.text == #"{"contentType":"application/octet-stream","deleteSource":false,"method":"PUT","modifiedAt":6,"protocol":"plain","size":5,"source":"a/b.bin"}"#)
    }

    @Test func aReplyKeepsABodyOnlyWhenItIsShortUTF8() {
        #expect(UploadReply.body(Array("created\n".utf8)) == "created\n")
        #expect(UploadReply.body(Array(repeating: UInt8(ascii: "a"), count: UploadReply.maxBodyBytes))?.utf8.count == UploadReply.maxBodyBytes)
        #expect(UploadReply.body(Array(repeating: UInt8(ascii: "a"), count: UploadReply.maxBodyBytes + 1)) == nil)
        #expect(UploadReply.body([0xFF, 0xFE, 0x00]) == nil)
        #expect(UploadReply.body([]) == "")
    }

    @Test func aReplyShowsEveryFieldNullWhereThereIsNothing() {
        #expect(UploadReply(status: 204).json.jsonText == #"{"body":null,"contentType":null,"etag":null,"location":null,"status":204}"#)
    }

    @Test func theDirectionsAreTheKindsClientsSee() {
        #expect(Direction.allCases.map(\.rawValue) == ["download", "upload"])
    }
}
