import Testing
@testable import Transfer

/// Object URLs: S3's key encoding, path and virtual-host addressing, canonical queries, endpoints.
@Suite struct ObjectStorageURLTests {
    @Test(arguments: [
        ("plain-name_1.0~x", "plain-name_1.0~x"),
        ("a b", "a%20b"),
        ("(1)", "%281%29"),
        ("c++", "c%2B%2B"),
        ("100%", "100%25"),
        ("é", "%C3%A9"),
        ("🎬", "%F0%9F%8E%AC"),
        ("a=b&c?d#e:f*g'h!", "a%3Db%26c%3Fd%23e%3Af%2Ag%27h%21"),
    ])
    func aSegmentKeepsOnlyUnreservedCharacters(_ raw: String, _ encoded: String) {
        #expect(S3Encoding.encode(raw) == encoded)
    }

    @Test func aKeyKeepsItsSlashesAndEmptySegments() {
        #expect(S3Encoding.encodePath("a/b c//d/") == "a/b%20c//d/")
        #expect(S3Encoding.encodePath("/lead") == "/lead")
    }

    @Test func pathStylePutsTheBucketFirstInThePath() throws {
        let endpoint = try S3Endpoint.parse("http://127.0.0.1:9000").get()
        let url = try endpoint.url(for: S3Fixture.location, addressing: .path).get()
        #expect(url == "http://127.0.0.1:9000/media/jobs/42/movie%20%28final%29.mkv")
    }

    @Test func anEndpointsPathPrefixComesBeforeTheBucket() throws {
        let endpoint = try S3Endpoint.parse("HTTPS://Storage.Example.com/s3/").get()
        #expect(endpoint == S3Endpoint(scheme: "https", authority: "storage.example.com", pathPrefix: "/s3", hostIsIPAddress: false))
        let url = try endpoint.url(for: ObjectLocation(bucket: "b", key: "~k+"), addressing: .path).get()
        #expect(url == "https://storage.example.com/s3/b/~k%2B")
    }

    @Test func virtualStylePutsTheBucketInTheHostName() throws {
        let aws = try S3Endpoint.parse("https://s3.eu-west-1.amazonaws.com").get()
        #expect(try aws.url(for: S3Fixture.location, addressing: .virtual).get()
            == "https://media.s3.eu-west-1.amazonaws.com/jobs/42/movie%20%28final%29.mkv")
        let local = try S3Endpoint.parse("http://localhost:9000/").get()
        #expect(try local.url(for: ObjectLocation(bucket: "my.bucket", key: "x"), addressing: .virtual).get()
            == "http://my.bucket.localhost:9000/x")
    }

    @Test func theQueryIsSortedEncodedAndHasAnEqualsSignForEveryParameter() {
        #expect(S3Query([("uploads", "")]).canonical == "uploads=")
        #expect(S3Query([("uploadId", "a+b/c= d"), ("partNumber", "3")]).canonical == "partNumber=3&uploadId=a%2Bb%2Fc%3D%20d")
        #expect(S3Query().canonical == "")
    }

    @Test(arguments: [
        "", "s3.amazonaws.com", "ftp://host", "http://", "http://user:pw@host", "http://host?x=1", "http://host#f",
        "http://host:0", "http://host:99999", "http://host:9a", "http://ho st", "http://host/a b", "http://[::1",
    ])
    func aMalformedEndpointIsAProblem(_ endpoint: String) {
        #expect(S3Fixture.settings(endpoint).problem != nil)
    }

    @Test func anEndpointsCredentialsAreNotRepeated() {
        let problem = S3Fixture.settings("https://admin:hunter2@s3.example.com").problem
        #expect(problem != nil)
        #expect(problem?.contains("hunter2") == false)
    }

    @Test func settingsAreLoggedWithoutTheSecret() {
        let settings = S3Fixture.settings()
        var dumped = ""
        dump(settings, to: &dumped)
        for text in ["\(settings)", String(reflecting: settings), dumped] {
            #expect(!text.contains(S3Fixture.secret))
            #expect(text.contains("AKIAIOSFODNN7EXAMPLE"))
        }
    }

    @Test func settingsThatCannotBeSignedAreAProblem() {
        #expect(S3Fixture.settings().problem == nil)
        #expect(S3Fixture.settings("http://[::1]:9000").problem == nil)
        #expect(S3Fixture.settings("http://10.0.0.5:9000", addressing: .virtual).problem != nil)
        #expect(S3Fixture.settings("http://[::1]:9000", addressing: .virtual).problem != nil)
        var settings = S3Fixture.settings()
        settings.region = "eu:west"
        #expect(settings.problem != nil)
        settings = S3Fixture.settings()
        settings.accessKeyID = "AKIA:X"
        #expect(settings.problem != nil)
        settings = S3Fixture.settings()
        settings.secretAccessKey = ""
        #expect(settings.problem != nil)
    }

    @Test func keysAndBucketsThatCannotBeAddressedAreRefusedBeforeSending() throws {
        let endpoint = try S3Endpoint.parse("http://minio:9000").get()
        for key in ["", ".", "a/../b", "a/./b", String(repeating: "k", count: 1025)] {
            let url = endpoint.url(for: ObjectLocation(bucket: "b", key: key), addressing: .path)
            #expect(url.failure.map(\.refusedCode) == "InvalidKey", "key \(key.prefix(20))")
        }
        #expect(endpoint.url(for: ObjectLocation(bucket: "b", key: String(repeating: "k", count: 1024)), addressing: .path).failure == nil)
        for bucket in ["", "Media", "my_bucket", ".b", "b.", "a..b"] {
            let url = endpoint.url(for: ObjectLocation(bucket: bucket, key: "k"), addressing: .virtual)
            #expect(url.failure.map(\.refusedCode) == "InvalidBucketName", "bucket \(bucket)")
        }
        #expect(endpoint.url(for: ObjectLocation(bucket: "a/b", key: "k"), addressing: .path).failure.map(\.refusedCode) == "InvalidBucketName")
        #expect(try endpoint.url(for: ObjectLocation(bucket: "Old_Bucket", key: "k"), addressing: .path).get() == "http://minio:9000/Old_Bucket/k")
    }
}

extension ObjectStorageFailure {
    /// The code of a refusal made before sending (status 0), else nil.
    var refusedCode: String? {
        if case .refused(0, let code, _) = self { return code }
        return nil
    }
}
