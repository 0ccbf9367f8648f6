import DownloadCore
@testable import DownloadService
import Testing
import Transfer

extension Objects {
    /// The key an object goes to: the destination's own, or under a prefix the name the origin gave;
    /// with `onConflict: rename` the first free `name (n).ext`, found by asking the bucket.
    @Suite struct ObjectNamingTests {
        /// The key `choose` settles on for `job`, with the bucket answering from `s3`.
        func chosen(_ job: Download, _ s3: FakeS3, contentDisposition: String? = nil,
                    effectiveURL: String? = nil) async -> Result<String, ObjectStorageFailure> {
            await withCheckedContinuation { continuation in
                ObjectNaming(client: s3.client).choose(for: job, contentDisposition: contentDisposition, effectiveURL: effectiveURL) {
                    continuation.resume(returning: $0)
                }
            }
        }

        @Test func aNamedKeyIsTheKey() throws {
            let job = try ObjectTest.job(destination: "s3://media/docs/report.pdf")

            let key = ObjectNaming.intendedKey(of: job, contentDisposition: "attachment; filename=\"other.pdf\"",
                                               effectiveURL: "http://origin.example/elsewhere.pdf")

            #expect(key == "docs/report.pdf")
        }

        @Test func underAPrefixTheOriginsContentDispositionNamesTheObject() throws {
            let job = try ObjectTest.job(destination: "s3://media/incoming/")

            let key = ObjectNaming.intendedKey(of: job, contentDisposition: "attachment; filename=\"quarterly report.csv\"",
                                               effectiveURL: "http://origin.example/download")

            #expect(key == "incoming/quarterly report.csv")
        }

        /// Without a Content-Disposition the final URL (after redirects) names it, else the job's own.
        @Test func underAPrefixWithoutContentDispositionTheURLNamesTheObject() throws {
            let job = try ObjectTest.job("fallback.iso", destination: "s3://media/incoming/")

            #expect(ObjectNaming.intendedKey(of: job, contentDisposition: nil,
                                             effectiveURL: "http://cdn.example/files/data%20set.bin?token=1") == "incoming/data set.bin")
            #expect(ObjectNaming.intendedKey(of: job, contentDisposition: nil, effectiveURL: nil) == "incoming/fallback.iso")
        }

        @Test func renameTakesTheFirstNameTheBucketDoesNotHave() async throws {
            let s3 = FakeS3(existing: ["docs/report.pdf", "docs/report (1).pdf"])
            let job = try ObjectTest.job(destination: "s3://media/docs/report.pdf") { $0.renameOnConflict = true }

            let key = await chosen(job, s3)

            #expect(try key.get() == "docs/report (2).pdf")
            #expect(s3.operations == [.head, .head, .head])
            #expect(s3.requests.map(\.key) == ["docs/report.pdf", "docs/report (1).pdf", "docs/report (2).pdf"])
            #expect(s3.requests.allSatisfy { $0.bucket == "media" })
        }

        @Test func renameKeepsAFreeNameAfterOneHEAD() async throws {
            let s3 = FakeS3(existing: ["docs/other.pdf"])
            let job = try ObjectTest.job(destination: "s3://media/docs/report.pdf") { $0.renameOnConflict = true }

            #expect(try await chosen(job, s3).get() == "docs/report.pdf")
            #expect(s3.operations == [.head])
        }

        /// A HEAD the bucket refuses says nothing about the name: the failure is the answer.
        @Test func renameGivesUpOnAHEADTheStorageRefuses() async throws {
            let s3 = FakeS3()
            s3.answer(.head, with: FakeS3.answer(403))
            let job = try ObjectTest.job(destination: "s3://media/docs/report.pdf") { $0.renameOnConflict = true }

            let key = await chosen(job, s3)

            guard case .failure(.refused(let status, let code, _)) = key else {
                Issue.record("expected a refusal, got \(key)")
                return
            }
            #expect(status == 403 && code == "AccessDenied")
            #expect(s3.operations == [.head])
        }

        /// Overwrite replaces whatever is there; fail finds out at its upload's start and at the
        /// conditional write: neither asks the bucket here.
        @Test(arguments: [true, false])
        func overwriteAndFailAskNothing(overwrite: Bool) async throws {
            let s3 = FakeS3(existing: ["docs/report.pdf"])
            let job = try ObjectTest.job(destination: "s3://media/docs/") { $0.overwrite = overwrite }

            let key = await chosen(job, s3, contentDisposition: "attachment; filename=\"report.pdf\"")

            #expect(try key.get() == "docs/report.pdf")
            #expect(s3.requests.isEmpty)
        }

        /// A name of more than ASCII: the rename's candidates stay in the destination's directory.
        @Test func renameOfANonASCIINameStaysInItsDirectory() async throws {
            let s3 = FakeS3(existing: ["docs/résumé.pdf"])
            let job = try ObjectTest.job(destination: "s3://media/docs/résumé.pdf") { $0.renameOnConflict = true }

            let key = await chosen(job, s3)

            #expect(s3.requests.map(\.key) == ["docs/résumé.pdf", "docs/résumé (1).pdf"])
            #expect((try? key.get()) == "docs/résumé (1).pdf")
        }
    }
}
