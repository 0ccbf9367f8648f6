import DownloadCore
@testable import DownloadService
import Foundation
import Glibc
import Testing

/// Upload sources on a real file system: pinned at submit, refused when they are not a regular
/// file under the root reached without links, and held to their pin when an attempt opens them.
@Suite final class UploadSourcesTests {
    let root = NSTemporaryDirectory() + "fetchd-sources-\(UUID().uuidString)"
    var sources: UploadSources { UploadSources(root: root) }

    init() throws {
        try FileManager.default.createDirectory(atPath: root + "/exports/2026", withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }  // a scratch directory: nothing to report if it stays

    func write(_ path: String, _ text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: root + "/" + path))
    }

    func source(_ path: String) throws -> Destination { try Destination.parse(path).get() }

    @Test func aRegularFileIsPinnedBySizeAndModificationTime() throws {
        try write("exports/2026/12.csv", "a,b\n1,2\n")
        var info = stat()
        #expect(stat(root + "/exports/2026/12.csv", &info) == 0)
        let pin = try sources.pin(try source("exports/2026/12.csv")).get()
        #expect(pin == SourcePin(size: 8, modifiedAt: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)))
    }

    @Test func anAttemptReadsTheFileItPinned() throws {
        try write("report.txt", "the report\n")
        let pin = try sources.pin(try source("report.txt")).get()
        let file = try sources.open(try source("report.txt"), pinned: pin).get()
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = pread(file.fd, &buffer, buffer.count, 0)
        #expect(Array(buffer.prefix(count)) == Array("the report\n".utf8))
    }

    @Test func aSourceChangedSinceItWasPinnedIsRefused() throws {
        try write("grows.log", "one\n")
        let pin = try sources.pin(try source("grows.log")).get()
        let handle = try #require(FileHandle(forWritingAtPath: root + "/grows.log"))
        handle.seekToEndOfFile()
        handle.write(Data("two\n".utf8))
        try handle.close()
        #expect(sources.open(try source("grows.log"), pinned: pin).failureValue == .changed)

        // The same size, written again a moment later: its time tells.
        try write("same.txt", "abc")
        let first = try sources.pin(try source("same.txt")).get()
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_000_000_000)],
                                              ofItemAtPath: root + "/same.txt")
        #expect(sources.open(try source("same.txt"), pinned: first).failureValue == .changed)
    }

    @Test func aMissingFileOrDirectoryIsMissing() throws {
        #expect(sources.pin(try source("nothing.bin")).failureValue == .missing)
        #expect(sources.pin(try source("no/such/dir/file.bin")).failureValue == .missing)
    }

    @Test func onlyARegularFileReachedWithoutLinksIsASource() throws {
        try write("exports/real.csv", "x")
        #expect(symlink(root + "/exports/real.csv", root + "/link.csv") == 0)
        #expect(symlink(root + "/exports", root + "/linked") == 0)
        #expect(mkfifo(root + "/pipe", 0o600) == 0)
        #expect(sources.pin(try source("link.csv")).failureValue == .invalid("is a symbolic link"))
        #expect(sources.pin(try source("linked/real.csv")).failureValue == .invalid("'linked' on the way is a symbolic link or not a directory"))
        #expect(sources.pin(try source("exports")).failureValue == .invalid("is not a regular file"))
        #expect(sources.pin(try source("pipe")).failureValue == .invalid("is not a regular file"))
        #expect(sources.pin(try source("exports/")).failureValue == .invalid("is not a file's path"))
    }
}

extension Result {
    var failureValue: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
