import DownloadCore
import Testing

@Suite struct ChecksumTests {
    @Test(arguments: Checksum.Algorithm.allCases)
    func parsesEachAlgorithmInEitherCase(_ algorithm: Checksum.Algorithm) throws {
        let hex = String(repeating: "Ab", count: algorithm.hexLength / 2)
        let checksum = try Checksum.parse("\(algorithm.rawValue.uppercased()):\(hex)").get()
        #expect(checksum == Checksum(algorithm: algorithm, hex: hex.lowercased()))
        #expect(checksum.description == "\(algorithm.rawValue):\(hex.lowercased())")
        #expect(Checksum(bareHex: hex)?.algorithm == algorithm)
    }

    @Test(arguments: ["", "sha256", "sha256:", "sha3:" + String(repeating: "0", count: 64), "md5:" + String(repeating: "0", count: 64),
                      "sha1:" + String(repeating: "g", count: 40), String(repeating: "0", count: 64), "sha256 :" + String(repeating: "0", count: 64)])
    func refusesWhatIsNotAlgColonHex(_ text: String) {
        #expect((try? Checksum.parse(text).get()) == nil)
    }

    @Test func aBareDigestOfNoKnownLengthHasNoAlgorithm() {
        #expect(Checksum(bareHex: String(repeating: "0", count: 63)) == nil)
        #expect(Checksum(bareHex: "xyz") == nil)
    }
}

@Suite struct DigestFileTests {
    let a = String(repeating: "a", count: 64)
    let b = String(repeating: "b", count: 64)

    @Test func picksTheLineForTheFileByItsLastSegment() throws {
        let file = try DigestFile.parse("# made by sha256sum\n\(a)  other.iso\n\(b) *./dist/app.tar.gz\r\n\n").get()
        #expect(try file.checksum(for: "app.tar.gz").get() == Checksum(algorithm: .sha256, hex: b))
        #expect(try file.checksum(for: "other.iso").get().hex == a)
        #expect((try? file.checksum(for: "missing.bin").get()) == nil)
    }

    @Test func theOnlyLineServesAnyName() throws {
        let md5 = String(repeating: "c", count: 32)
        #expect(try DigestFile.parse("\(md5)\n").get().checksum(for: "x.bin").get() == Checksum(algorithm: .md5, hex: md5))
        #expect(try DigestFile.parse("\(a)  original-name.bin").get().checksum(for: "x.bin").get().hex == a)
    }

    @Test func readsBSDStyleLines() throws {
        let sha512 = String(repeating: "d", count: 128)
        let file = try DigestFile.parse("SHA512 (app.tar.gz) = \(sha512)\nSHA256 (b.bin) = \(b)\n").get()
        #expect(try file.checksum(for: "app.tar.gz").get() == Checksum(algorithm: .sha512, hex: sha512))
        // The name given must agree with the digest's length.
        #expect((try? DigestFile.parse("MD5 (x) = \(a)").get()) == nil)
    }

    @Test(arguments: ["", "\n# only a comment\n", "<html>404</html>", "\(String(repeating: "a", count: 64))  ok\nnot a digest line\n"])
    func refusesWhatHasNoDigestOrALineThatIsNotOne(_ text: String) {
        #expect((try? DigestFile.parse(text).get()) == nil)
    }

    @Test func readsOnlyA2xxOfUTF8Text() {
        #expect((try? DigestFile.read(status: 200, body: Array("\(a)\n".utf8)).get()) != nil)
        #expect((try? DigestFile.read(status: 404, body: Array("\(a)\n".utf8)).get()) == nil)
        #expect((try? DigestFile.read(status: 200, body: [0xFF, 0xFE]).get()) == nil)
        #expect((try? DigestFile.read(status: 200, body: Array(repeating: 0x61, count: DigestFile.maxBytes + 1)).get()) == nil)
        #expect(DigestFile.isTransient(status: 503) && DigestFile.isTransient(status: 429) && !DigestFile.isTransient(status: 404))
    }
}

/// `onConflict`, `checksum`, `checksumURL`, `resourceTimeout` and directory destinations.
extension SubmissionValidatorTests {
    @Test func acceptsEveryFileField() throws {
        let md5 = String(repeating: "E", count: 32)
        let submission = try validate("""
            {"url":"http://e.com/a","destination":"inbox/","checksum":"md5:\(md5)","onConflict":"rename","resourceTimeout":"90s"}
            """).get()
        #expect(submission.checksum == Checksum(algorithm: .md5, hex: md5.lowercased()))
        #expect(submission.renameOnConflict && !submission.overwrite)
        #expect(submission.resourceTimeout == "90s")
        #expect(submission.destination.isDirectory && submission.destination.directories == ["inbox"])
        let job = submission.makeDownload(id: "x", now: 1000)
        #expect(job.path == nil)
        #expect(job.resourceDeadline == nil)
    }

    @Test func aNamedFileThatIsNeverRenamedKnowsItsPathAtOnce() throws {
        let job = try validate(#"{"url":"http://e.com/a","destination":"a/b.bin","onConflict":"overwrite"}"#).get().makeDownload(id: "x", now: 0)
        #expect(job.path == "a/b.bin" && job.overwrite && !job.renameOnConflict)
    }

    @Test func aChecksumURLAndAnAgreeingSha256AreAccepted() throws {
        let hex = String(repeating: "a", count: 64)
        #expect(try fields(#"{"url":"http://e.com/a","destination":"a","sha256":"\#(hex)","checksum":"sha256:\#(hex.uppercased())"}"#).isEmpty)
        #expect(try validate(#"{"url":"http://e.com/a","destination":"a","checksumURL":"https://e.com/SUMS"}"#).get().checksumURL == "https://e.com/SUMS")
    }

    @Test(arguments: [
        (#"{"url":"http://e.com/a","destination":"a","onConflict":"skip"}"#, "onConflict"),
        (#"{"url":"http://e.com/a","destination":"a","onConflict":"fail","overwrite":true}"#, "onConflict"),
        (#"{"url":"http://e.com/a","destination":"a","onConflict":"overwrite","overwrite":false}"#, "onConflict"),
        (#"{"url":"http://e.com/a","destination":"a","checksum":"sha256:\#(String(repeating: "a", count: 64))","sha256":"\#(String(repeating: "b", count: 64))"}"#, "checksum"),
        (#"{"url":"http://e.com/a","destination":"a","checksum":true}"#, "checksum"),
        (#"{"url":"http://e.com/a","destination":"a","checksumURL":"file:///etc/SUMS"}"#, "checksumURL"),
        (#"{"url":"http://e.com/a","destination":"a","checksumURL":"http://e.com/S","checksum":"md5:\#(String(repeating: "b", count: 32))"}"#, "checksumURL"),
        (#"{"url":"http://e.com/a","destination":"a","resourceTimeout":"0"}"#, "resourceTimeout"),
        (#"{"url":"http://e.com/a","destination":"a","resourceTimeout":"-5s"}"#, "resourceTimeout"),
        (#"{"url":"http://e.com/a","destination":"a","resourceTimeout":60}"#, "resourceTimeout"),
        (#"{"url":"http://e.com/a","destination":"/"}"#, "destination"),
        (#"{"url":"http://e.com/a","destination":"../"}"#, "destination"),
    ])
    func rejectsFileFields(json: String, field: String) throws {
        #expect(try fields(json).contains(field))
    }

    @Test func theResourceDeadlineRunsFromTheFirstAttempt() throws {
        var job = try validate(#"{"url":"http://e.com/a","destination":"a","resourceTimeout":"2m"}"#).get().makeDownload(id: "x", now: 0)
        #expect(job.resourceDeadline == nil)
        job.startedAt = 5000
        #expect(job.resourceDeadline == 125_000)
    }

    @Test func aDirectoryDestinationTakesTheChosenName() throws {
        let directory = try Destination.parse("a/b/").get()
        let file = directory.file(named: FileName.choose(contentDisposition: #"attachment; filename="../../etc/passwd""#, finalURL: nil))
        #expect(file.directories == ["a", "b"])
        #expect(!file.fileName.contains("/") && !file.fileName.hasPrefix("."))
        #expect(file.path == "a/b/" + file.fileName)
        #expect(Destination(stored: "a/b/") == directory)
    }
}
