@testable import DownloadService
import Foundation
import Testing
import Transfer

extension Objects {
    /// The staging file of an object attempt: each part read back and hashed, its disk given back once
    /// it is committed, and the file kept at the length the download resumes from.
    @Suite final class StagingFileTests: Sendable {
        static let mebibyte = 1 << 20

        let directory: String

        init() throws {
            directory = NSTemporaryDirectory() + "fetchd-staging-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }

        deinit {
            try? FileManager.default.removeItem(atPath: directory)
        }

        /// A staging file holding `bytes` (none written when nil).
        func staging(_ bytes: [UInt8]?) throws -> StagingFile {
            let path = directory + "/job.part"
            if let bytes { try writeFile(path, bytes) }
            return StagingFile(path: path)
        }

        /// Disk blocks (512 bytes) the file takes.
        func blocks(_ path: String) -> Int {
            var info = stat()
            return stat(path, &info) == 0 ? Int(info.st_blocks) : -1
        }

        func contents(_ path: String) -> [UInt8] {
            FileManager.default.contents(atPath: path).map { [UInt8]($0) } ?? []
        }

        @Test func aPartsHashIsTheSHA256OfItsBytesAndGoesOnInTheObjectsDigest() throws {
            // Larger than the 1 MiB read buffer, so that a part is read in more than one go.
            let bytes = ObjectTest.noise(Self.mebibyte * 2 + 1000)
            let file = try staging(bytes)
            var digest = ResumableDigest(extra: nil)

            let first = try file.hash(0..<1500, into: &digest)
            let second = try file.hash(1500..<Int64(bytes.count), into: &digest)

            #expect(first == ObjectTest.sha256(bytes[0..<1500]))
            #expect(second == ObjectTest.sha256(bytes[1500...]))
            #expect(digest.finalize().sha256 == ObjectTest.sha256(bytes))
        }

        @Test func aRangeBeyondTheFilesEndIsAnError() throws {
            let file = try staging(ObjectTest.noise(100))
            var digest = ResumableDigest(extra: nil)

            #expect(throws: StagingFile.Failure.self) { try file.hash(50..<200, into: &digest) }
        }

        /// The part's stretch reads as zeros and takes no disk; the file's length and the bytes after
        /// it stay, so that the download goes on at the end.
        @Test func aReleasedPartLeavesAHoleOfTheSameLength() throws {
            let bytes = ObjectTest.noise(Self.mebibyte * 3)
            let file = try staging(bytes)
            let before = blocks(file.path)

            file.release(0..<Int64(Self.mebibyte * 2))

            #expect(blocks(file.path) < before)
            #expect(file.length == Int64(bytes.count))
            let now = contents(file.path)
            #expect(now[..<(Self.mebibyte * 2)].allSatisfy { $0 == 0 })
            #expect(now[(Self.mebibyte * 2)...] == bytes[(Self.mebibyte * 2)...])
        }

        @Test func aFileWhosePartsWentUpBeginsWithAHole() throws {
            let file = try staging(ObjectTest.noise(Self.mebibyte * 2))
            #expect(!file.beginsWithHole)

            file.release(0..<Int64(Self.mebibyte))

            #expect(file.beginsWithHole)
        }

        @Test func neitherAMissingNorAnEmptyFileBeginsWithAHole() throws {
            #expect(!(try staging(nil)).beginsWithHole)
            #expect(!(try staging([])).beginsWithHole)
        }

        /// Another node's committed parts: the file grows to their end without taking disk for them.
        @Test func aMissingFileGrowsToTheCommittedEndAsAHole() throws {
            let file = try staging(nil)

            try file.setLength(Int64(Self.mebibyte * 8))

            #expect(file.length == Int64(Self.mebibyte * 8))
            #expect(blocks(file.path) == 0)
            #expect(file.beginsWithHole)
        }

        @Test func aLongerFileIsCutToTheLengthAndKeepsItsFirstBytes() throws {
            let file = try staging(Array("kept, then cut".utf8))

            try file.setLength(4)

            #expect(file.length == 4)
            #expect(contents(file.path) == Array("kept".utf8))
        }

        /// Parts fetched at their offsets mark the file until it is cut to what counts; writes in
        /// between keep the mark, and the file's bytes and permissions are otherwise untouched.
        @Test func aFileMarkedOutOfOrderStaysSoUntilItsLengthIsSet() throws {
            let bytes = ObjectTest.noise(4096)
            let file = try staging(bytes)
            let permissions = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
            #expect(!file.isOutOfOrder)

            try file.markOutOfOrder()
            let handle = try #require(FileHandle(forWritingAtPath: file.path))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(bytes))
            try handle.close()

            #expect(file.isOutOfOrder)
            #expect(contents(file.path) == bytes + bytes)
            try file.setLength(4096)
            #expect(!file.isOutOfOrder)
            #expect(contents(file.path) == bytes)
            #expect(try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int == permissions)
        }
    }
}
