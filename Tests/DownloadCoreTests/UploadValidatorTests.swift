import DownloadCore
import Testing

/// `POST /uploads` bodies: what a valid one becomes, and every error of an invalid one at once.
@Suite struct UploadValidatorTests {
    func validate(_ json: String) throws -> Result<NewUpload, FieldErrors> {
        UploadValidator.validate(try JSONParser.parse(Array(json.utf8)))
    }

    func errors(_ json: String) throws -> [String] {
        guard case .failure(let failure) = try validate(json) else { return [] }
        return failure.errors.map { "\($0.field): \($0.message)" }
    }

    @Test func aMinimalUploadTakesTheDefaults() throws {
        let upload = try validate(#"{"url":"https://up.example/files/a","source":"exports/a.csv"}"#).get()
        #expect(upload.url == "https://up.example/files/a" && upload.source.path == "exports/a.csv")
        #expect(upload.method == .put && upload.uploadProtocol == .plain && upload.contentType == "application/octet-stream")
        #expect(!upload.deleteSource && upload.session == "default" && upload.priority == 0.5)

        let job = upload.makeDownload(id: "u1", now: 1_000, pin: SourcePin(size: 42, modifiedAt: 7))
        #expect(job.direction == .upload && job.state == .queued && job.hostKey == "up.example:443")
        #expect(job.upload == UploadPlan(source: upload.source, pin: SourcePin(size: 42, modifiedAt: 7)))
        #expect(job.expectedBytesToSend == 42 && job.runAt == 1_000)
    }

    @Test func everyFieldIsTaken() throws {
        let upload = try validate("""
            {"url":"http://up.example/in","source":"a/b.bin","method":"POST","protocol":"plain","contentType":"text/csv",
             "deleteSource":true,"replyDestination":"receipts/b.json","session":"nightly","priority":0.9,"earliestBeginDate":"2030-01-01T00:00:00Z",
             "headers":{"Authorization":"Bearer t"},"maxBytesPerSecond":65536,"resourceTimeout":"2h","metadata":{"k":1}}
            """).get()
        #expect(upload.method == .post && upload.contentType == "text/csv" && upload.deleteSource)
        #expect(upload.replyDestination?.path == "receipts/b.json")
        #expect(upload.session == "nightly" && upload.priority == 0.9 && upload.earliestBeginDate == 1_893_456_000_000)
        #expect(upload.headers == [OriginHeader(name: "Authorization", value: "Bearer t")])
        #expect(upload.maxBytesPerSecond == 65536 && upload.resourceTimeout == "2h" && upload.metadata == #"{"k":1}"#)
    }

    @Test func tusIsTaken() throws {
        #expect(try validate(#"{"url":"https://up.example/files/","source":"a","protocol":"tus"}"#).get().uploadProtocol == .tus)
    }

    @Test func anS3URLNamesTheObjectTheUploadBecomes() throws {
        let upload = try validate(#"{"url":"s3://media-bucket/in/a.bin","source":"a.bin"}"#).get()
        let job = upload.makeDownload(id: "u1", now: 0, pin: SourcePin(size: 1, modifiedAt: 1))
        #expect(job.destination.bucket == "media-bucket" && job.destination.relativePath == "in/a.bin")
        #expect(job.hostKey == "media-bucket:0")
    }

    @Test func everyErrorIsToldAtOnce() throws {
        #expect(try errors(#"{"destination":"x","method":"PATCH","protocol":"rsync","contentType":"","priority":3}"#) == [
            "destination: unknown field",
            "url: is required",
            "source: is required",
            "method: must be PUT or POST",
            "protocol: must be plain or tus",
            "contentType: must be a media type of 1–256 printable ASCII characters",
            "priority: must be a number from 0.0 to 1.0",
        ])
    }

    @Test func aFileServerURLTakesTheAuthFieldIntoItsURL() throws {
        let upload = try validate(#"{"url":"ftp://files.example/in/a.bin","source":"a.bin","auth":{"username":"ann","password":"p@ss"}}"#).get()
        #expect(upload.url == "ftp://ann:p%40ss@files.example/in/a.bin" && upload.parsedURL.hostKey == "files.example:21")
        #expect(try validate(#"{"url":"sftp://ann@files.example/in/a.bin","source":"a.bin"}"#).get().parsedURL.port == 22)
    }

    @Test(arguments: [
        (#"{"url":"gopher://x/a","source":"a"}"#, "url: scheme 'gopher' is not supported: use one of ftp, ftps, http, https, sftp"),
        (#"{"url":"sftp://x/a","source":"a","method":"POST"}"#, "method: POST is for http(s) URLs only: a file server stores the file"),
        (#"{"url":"ftp://x/a","source":"a","protocol":"tus"}"#, "protocol: tus is for http(s) URLs only"),
        (#"{"url":"ftp://x/a","source":"a","replyDestination":"r.json"}"#,
         "replyDestination: takes the answer of a plain upload to an http(s) URL only"),
        (#"{"url":"https://x/a","source":"a","auth":{"username":"u","password":"p"}}"#, "auth: is for ftp://, ftps:// and sftp:// URLs only"),
        (#"{"url":"s3://bucket/in/","source":"a"}"#, "url: must name an object: s3://bucket/key, not a prefix"),
        (#"{"url":"s3://bucket/a","source":"a","method":"POST"}"#, "method: must be PUT for an s3:// URL"),
        (#"{"url":"s3://bucket/a","source":"a","headers":{"X-A":"1"}}"#, "headers: are not sent to the object storage"),
        (#"{"url":"http://x/a","source":"a","replyDestination":"in/"}"#, "replyDestination: must name a file under the download root"),
        (#"{"url":"http://x/a","source":"a","protocol":"tus","replyDestination":"r.json"}"#,
         "replyDestination: takes the answer of a plain upload to an http(s) URL only"),
        (#"{"url":"http://x/a","source":"dir/"}"#, "source: must name a file under the upload root"),
        (#"{"url":"http://x/a","source":"s3://bucket/key"}"#, "source: must name a file under the upload root"),
        (#"{"url":"http://x/a","source":"../etc/passwd"}"#, "source: must not contain '.' or '..' segments"),
        (#"{"url":"http://x/a","source":"a","headers":{"Content-Type":"text/plain"}}"#, "headers: 'Content-Type' may not be set: give contentType"),
        (#"{"url":"http://x/a","source":"a","deleteSource":"yes"}"#, "deleteSource: must be a boolean"),
    ])
    func aFieldThatBreaksItsRuleIsNamed(_ json: String, _ error: String) throws {
        #expect(try errors(json) == [error])
    }
}
