import FuzzSupport

#if FUZZING
/// libFuzzer's entry point (`make fuzz` builds with `--sanitize fuzzer -DFUZZING`); libFuzzer
/// supplies `main`.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    Oracle.fuzz(data, size)
}
#else
/// Without libFuzzer: `swift run XMLReaderFuzz Fuzz/corpus/XMLReader crash-…` replays
/// a corpus or a crash input through the same checks.
@main extension Oracle {}
#endif
