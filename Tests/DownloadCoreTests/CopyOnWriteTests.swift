import DownloadCore
import Testing

@Suite struct CopyOnWriteTests {
    struct Holder {
        @CopyOnWrite var names: [String] = []
    }

    @Test func aChangedCopyLeavesTheOriginalAsItWas() {
        var original = Holder()
        original.names.append("a")
        var copy = original
        copy.names.append("b")
        original.names[0] = "z"
        #expect(original.names == ["z"])
        #expect(copy.names == ["a", "b"])
    }

    @Test func aValueInADictionaryChangesThroughOptionalChaining() {
        var held: [String: Holder] = ["job": Holder()]
        let before = held["job"]
        held["job"]?.names.append("a")
        held["job"]?.names.append("b")
        #expect(held["job"]?.names == ["a", "b"])
        #expect(before?.names == [])
    }
}
