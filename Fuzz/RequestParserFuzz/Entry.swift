#if FUZZING
/// libFuzzer's entry point (`make fuzz` builds with `--sanitize fuzzer -DFUZZING`); libFuzzer
/// supplies `main`. A failed check crashes, which libFuzzer records with the input.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    do {
        try Oracle.check(input)
    } catch {
        fatalError("\(error)")
    }
    return 0
}
#else
import Foundation

/// Without libFuzzer: replays the given files and directories (a corpus, or a crash input
/// libFuzzer saved) through the same checks, e.g.
/// `swift run RequestParserFuzz Fuzz/corpus/RequestParser crash-…`.
@main
enum ReplayCorpus {
    static func main() throws {
        var failures = 0
        var count = 0
        for path in try inputFiles(CommandLine.arguments.dropFirst()) {
            count += 1
            do {
                try Oracle.check(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
            } catch {
                failures += 1
                print("\(path): \(error)")
            }
        }
        print("\(count) inputs replayed, \(failures) failed")
        if failures > 0 { exit(1) }
    }

    private static func inputFiles(_ paths: ArraySlice<String>) throws -> [String] {
        try paths.flatMap { path -> [String] in
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else { return [path] }
            return try FileManager.default.contentsOfDirectory(atPath: path).sorted().map { "\(path)/\($0)" }
        }
    }
}
#endif
