import DownloadCore
import Foundation
import Persistence
@testable import Store
import TestSupport
import Testing

/// A session action logs each job's row as the JSON array SQLite writes; reading the log turns it
/// back into the Download, every field as the action left it, whatever its text holds.
@Suite struct RowSnapshotTests {
    @Test func aLoggedRowReadsBackAsTheDownloadTheActionLeft() throws {
        let directory = NSTemporaryDirectory() + "fetchd-snapshot-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Every field of the Download, so that the test sees any one the snapshot loses.
        let store = try SQLiteStore(path: directory + "/fetchd.sqlite", statePayload: { Array(String(reflecting: $0).utf8) })
        defer { store.close() }
        var download = makeDownload("01A", session: "s", priority: 0.125)
        download.metadata = #"{"note":"ünïcode \"quoted\"\n\t\u0001 😀 \\ /"}"#
        download.url = "http://example.com/a?b=%22c%22&d=\u{e9}"
        download.expectedBytesToReceive = 1 << 40
        download.bytesReceived = 7
        _ = try store.insert(download, idempotency: nil)
        let inserted = try store.eventLogSpan().newest

        for kind in [SessionActionKind.pause, .resume] {
            _ = try store.act(SessionAction(kind: kind, session: "s", state: nil, now: 5, events: { _ in [] }, sessionFinished: { _ in [] }))
            let now = try #require(try store.download(id: "01A"))
            let logged = try store.loggedEvents(after: try store.eventLogSpan().newest - 1, session: nil, limit: 10)
            #expect(logged.map { String(decoding: $0.payload, as: UTF8.self) } == [String(reflecting: now)])
        }
        #expect(try store.loggedEvents(after: inserted, session: "s", limit: 10).count == 2)
    }

    @Test func aSnapshotFromBeforeAnAddedColumnReadsItAsNullAndKeepsItsRevision() throws {
        let columns = DownloadColumns.written.count
        // The values of a snapshot written when the table had one column fewer: columns - 1, then the revision.
        let older = "[" + (0..<columns - 1).map { _ in "null" }.joined(separator: ",") + ",42]"
        let row = try #require(RowSnapshot(Array(older.utf8))).withColumnsAddedSince()
        #expect(row.isNull(Int32(columns - 1)))
        #expect(row.int64(Int32(columns)) == 42)
    }

    @Test func refusesWhatSQLiteDoesNotWrite() {
        for text in ["", "[", "[1,", "[1]x", "{\"a\":1}", "[\"\\q\"]", "[nul]", "[\"\\ud800\"]"] {
            #expect(RowSnapshot(Array(text.utf8)) == nil, "\(text)")
        }
        let row = RowSnapshot(Array(#"[-3,0.5,null,"a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00",1.0e+20]"#.utf8))
        #expect(row?.int64(0) == -3 && row?.double(1) == 0.5 && row?.isNull(2) == true && row?.optionalString(2) == nil)
        #expect(row?.string(3) == "a\"\\/\u{8}\u{c}\n\r\té😀")
        #expect(row?.double(4) == 1e20)
    }

    /// A log row of many events keeps their payloads as one JSON array; each comes back as it was
    /// written, whatever brackets, commas and quotes its strings hold.
    @Test func aRowOfManyEventsSplitsIntoEachPayload() {
        let payloads = [#"{"id":"a","url":"http://h/x?a=[1,2]&b={}"}"#, #"["b","say \"hi\", ]",null,1.5]"#, #"{"n":{"m":[{}]}}"#]
        let joined = Array(("[" + payloads.joined(separator: ",") + "]").utf8)
        #expect(JSONArrayElements.split(joined)?.map { String(decoding: $0, as: UTF8.self) } == payloads)
        #expect(JSONArrayElements.split(Array("[]".utf8))?.isEmpty == true)
        #expect(JSONArrayElements.split(Array(#"["open]"#.utf8)) == nil)
        #expect(JSONArrayElements.split(Array(#"{"a":1}"#.utf8)) == nil)
    }
}
