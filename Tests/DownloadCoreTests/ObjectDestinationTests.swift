import DownloadCore
import Testing

/// `s3://bucket/key` destinations: the bucket by S3's naming rules, the key by the path rules,
/// and the upload record a job keeps.
@Suite struct ObjectDestinationTests {
    @Test func anObjectDestinationNamesItsBucketAndKey() throws {
        let destination = try Destination.parse("s3://media-2026/videos/a b (1).mp4").get()
        #expect(destination.bucket == "media-2026")
        #expect(destination.isObject && !destination.isDirectory && destination.isValid)
        #expect(destination.segments == ["videos", "a b (1).mp4"])
        #expect(destination.relativePath == "videos/a b (1).mp4")
        #expect(destination.fileName == "a b (1).mp4")
        #expect(destination.path == "s3://media-2026/videos/a b (1).mp4")
    }

    @Test func aKeyEndingInASlashIsAPrefixNamedByTheOrigin() throws {
        let prefix = try Destination.parse("s3://bucket/incoming/").get()
        #expect(prefix.isDirectory && prefix.isValid && prefix.bucket == "bucket")
        let file = prefix.file(named: "report.pdf")
        #expect(file.relativePath == "incoming/report.pdf" && file.bucket == "bucket" && !file.isDirectory)
        #expect(prefix.pathInDirectory(named: "report.pdf") == "incoming/report.pdf")

        let top = try Destination.parse("s3://bucket/").get()
        #expect(top.isDirectory && top.isValid && top.segments.isEmpty)
        #expect(top.file(named: "x.bin").relativePath == "x.bin")
    }

    /// Read back from the store, a destination is split only when asked (each time, or once for
    /// `withSegments`): into the same parts.
    @Test(arguments: ["s3://bucket/a/b.bin", "s3://bucket/in/", "s3://bucket/", "dir/file.bin", "a/b/", "f"])
    func aStoredDestinationReadsBackTheSame(_ path: String) throws {
        let parsed = try Destination.parse(path).get()
        for stored in [Destination(stored: path), Destination(stored: path).withSegments] {
            #expect(stored == parsed)
            #expect(stored.segments == parsed.segments && stored.isDirectory == parsed.isDirectory && stored.bucket == parsed.bucket)
            #expect(stored.isValid && stored.relativePath == parsed.relativePath && stored.fileName == parsed.fileName)
            #expect(stored.directories == parsed.directories && stored.isObject == parsed.isObject)
            #expect(stored.file(named: "x.bin").relativePath == parsed.file(named: "x.bin").relativePath)
        }
    }

    @Test func aStoredPathThatBreaksTheRulesHasNoParts() {
        for path in ["a//b", "../x", "s3://Bucket/key", "s3://bucket", ""] {
            for stored in [Destination(stored: path), Destination(stored: path).withSegments] {
                #expect(!stored.isValid && stored.segments.isEmpty && stored.bucket == nil && !stored.isObject, "\(path)")
                #expect(stored.fileName == "" && stored.directories.isEmpty, "\(path)")
            }
        }
    }

    @Test(arguments: [
        ("s3://bucket", "must name a key"),
        ("s3://ab/key", "3 to 63"),
        ("s3://\(String(repeating: "a", count: 64))/key", "3 to 63"),
        ("s3://Bucket/key", "lower-case"),
        ("s3://my_bucket/key", "lower-case"),
        ("s3://-bucket/key", "begin and end"),
        ("s3://bucket-/key", "begin and end"),
        ("s3://my..bucket/key", "two dots"),
        ("s3://192.168.5.4/key", "IP address"),
        ("s3://xn--bucket/key", "xn--"),
        ("s3://bucket-s3alias/key", "-s3alias"),
        ("s3://bucket/a//b", "empty segments"),
        ("s3://bucket/../b", "'.' or '..'"),
        ("s3://bucket/a\u{0}b", "control"),
        ("s3://bucket/\(String(repeating: "k", count: 1025))", "at most 1024 bytes"),
    ])
    func aBadBucketOrKeyIsRefusedWithItsReason(_ path: String, _ reason: String) {
        guard case .failure(let problem) = Destination.parse(path) else {
            Issue.record("\(path) was accepted")
            return
        }
        #expect(problem.message.contains(reason), "\(path): \(problem.message)")
    }

    /// The path under the root or the key, a directory's or prefix's with its `/`; nothing for
    /// one that breaks the rules.
    @Test func theRelativePathIsThePathOrTheKey() throws {
        #expect(try Destination.parse("inbox/2026/").get().relativePath == "inbox/2026/")
        #expect(try Destination.parse("s3://bucket/in/coming/").get().relativePath == "in/coming/")
        #expect(try Destination.parse("s3://bucket/").get().relativePath == "")
        #expect(Destination(stored: "a//b").relativePath == "")
    }

    @Test func aLocalPathIsNoObject() throws {
        let local = try Destination.parse("dir/file.bin").get()
        #expect(local.bucket == nil && !local.isObject && local.relativePath == "dir/file.bin")
        #expect(!Destination(stored: "s3://Bad/key").isValid && Destination(stored: "s3://Bad/key").bucket == nil)
    }

    @Test func anUploadRecordReadsBackWhatItWrote() {
        let upload = ObjectUpload(key: "a/b (1).bin", uploadID: "2~abc/def+ghi=", parts: [
            .init(number: 1, size: 5_242_880, etag: "\"0f343b0931126a20f133d67c2b018a3b\""),
            .init(number: 2, size: 17, etag: "\"9b2cf535f27731c974343645a3985328\""),
        ], digestState: "v1:AAAA:")
        #expect(ObjectUpload.parse(upload.text) == upload)
        #expect(upload.end == 5_242_897)
        #expect(ObjectUpload.parse(ObjectUpload(key: "k", uploadID: "u").text) == ObjectUpload(key: "k", uploadID: "u"))
    }

    @Test(arguments: ["", "key", "key\nupload", "key\nupload\nstate\n2 10 \"e\"", "key\nupload\nstate\n1 0 \"e\"",
                      "key\nupload\nstate\n1 ten \"e\"", "\nupload\nstate"])
    func anUploadRecordThatIsNotOneIsRefused(_ text: String) {
        #expect(ObjectUpload.parse(text) == nil)
    }
}
