import Foundation

/// What each fuzz target under Fuzz/ supplies: its check of one input. Built with `-DFUZZING`,
/// the target hands libFuzzer's inputs to `fuzz`; built plainly, its `@main extension` replays
/// a corpus through `main`.
public protocol FuzzOracle {
    /// Throws `OracleFailure` when the code under test misbehaves on `input`.
    static func check(_ input: [UInt8]) throws
}

/// What a run of the code under test over one input must never do.
public struct OracleFailure: Error, CustomStringConvertible {
    public var description: String

    public init(description: String) {
        self.description = description
    }
}

extension FuzzOracle {
    /// One input from libFuzzer. A failed check crashes, which libFuzzer records with the input.
    public static func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
        let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        do {
            try check(input)
        } catch {
            fatalError("\(error)")
        }
        return 0
    }

    /// Without libFuzzer: replays the files and directories given as arguments (a corpus, or a
    /// crash input libFuzzer saved) through the same check; exits 1 if any fails.
    public static func main() throws {
        var failures = 0
        var count = 0
        for path in try inputFiles(CommandLine.arguments.dropFirst()) {
            count += 1
            do {
                try check(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
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
