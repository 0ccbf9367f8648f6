import DownloadCore
import Testing

@Suite struct DownloadIDTests {
    @Test func idsSortByCreationEvenWithinOneMillisecond() {
        var generator = DownloadIDGenerator()
        var ids: [String] = []
        for millis in [Int64(1000), 1000, 1000, 1001, 1001, 999, 5000] { ids.append(generator.next(now: millis)) }
        #expect(ids == ids.sorted())
        #expect(Set(ids).count == ids.count)
    }

    @Test func idsAreURLSafe() {
        var generator = DownloadIDGenerator()
        let id = generator.next(now: 1_795_255_200_000)
        #expect(id.count == 26)
        #expect(id.allSatisfy { $0.isASCII && ($0.isNumber || $0.isUppercase) })
    }
}
