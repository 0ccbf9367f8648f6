import DownloadCore
import Foundation
import Persistence
@testable import SQLiteStore
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

    /// A session action keeps a log row's first job whole and the others as what differs from it
    /// (`SnapshotRows`): each still reads back as its own Download, across more jobs than one row
    /// holds, whatever its columns hold; and `job_counts` follows without its per-job trigger.
    @Test func everyJobOfABigActionReadsBackWholeAndTheCountsFollow() throws {
        try withStoreLoggingEveryField { store, payload in try everyJobOfABigActionReadsBackWhole(store, payload) }
    }

    private func everyJobOfABigActionReadsBackWhole(_ store: SQLiteStore, _ payload: (Download) -> [UInt8]) throws {
        let jobs = StateLog.eventsPerRow + 2
        for index in 0..<jobs {
            var download = makeDownload(String(format: "01J%05d", index), session: "s", priority: index % 3 == 0 ? 0.5 : 0.125)
            if index % 2 == 1 { download.metadata = #"{"n":\#(index),"note":"ünïcode \"quoted\", [x]\n"}"# }
            if index % 5 == 0 { download.expectedBytesToReceive = Int64(index) << 30 }
            if index % 7 == 0 { download.url = "http://example.com/a?b=%22c%22&d=\u{e9}&i=\(index)" }
            _ = try store.insert(download, idempotency: nil)
        }
        _ = try store.insert(makeDownload("01Z", session: "other"), idempotency: nil)

        for (kind, state) in [(SessionActionKind.pause, DownloadState.paused), (.resume, .queued), (.cancel, .cancelled), (.retry, .queued)] {
            let before = try store.eventLogSpan().newest
            if kind == .retry {
                // A retry applies to failed jobs: fail the session's first one.
                var failed = try #require(try store.download(id: "01J00000"))
                failed.state = .failed
                #expect(try store.update(failed, expecting: [.cancelled]))
            }
            let result = try store.act(SessionAction(kind: kind, session: "s", state: nil, now: 5, events: { _ in [] }, sessionFinished: { _ in [] }))
            #expect(result.changed.count == (kind == .retry ? 1 : jobs), "\(kind)")
            let logged = try store.loggedEvents(after: try store.eventLogSpan().newest - Int64(result.changed.count), session: "s", limit: jobs)
            #expect(logged.map(\.downloadID) == result.changed, "\(kind)")
            for event in logged {
                let now = try #require(try store.download(id: event.downloadID))
                #expect(event.payload == payload(now), "\(kind) \(event.downloadID)")
                #expect(now.state == state)
            }
            #expect(try store.eventLogSpan().newest > before)
            var counted = try store.counts(session: "s")
            counted[.queued, default: 0] += 1
            #expect(try store.counts(session: nil) == counted, "\(kind): job_counts as the jobs are")
        }
    }

    /// A batch logs each log row's first new job whole and the others as what differs from it
    /// (`NewRowSnapshot`): every job reads back as the Download stored, across sessions that
    /// alternate, multi-row inserts and one-by-one ones (a key, a busy destination), and more jobs
    /// than one log row holds.
    @Test func everyJobOfABatchReadsBackAsStored() throws {
        try withStoreLoggingEveryField { store, payload in try everyJobOfABatchReadsBack(store, payload) }
    }

    private func everyJobOfABatchReadsBack(_ store: SQLiteStore, _ payload: (Download) -> [UInt8]) throws {
        _ = try store.insert(makeDownload("01B00000", destination: "busy"), idempotency: nil)
        let before = try store.eventLogSpan().newest
        let count = StateLog.eventsPerRow + 120
        let jobs = (0..<count).map { index in
            // Sessions change after 1,010 jobs of one, then every 3: runs longer and shorter than a row.
            var download = makeDownload(String(format: "01J%05d", index), session: index < 1010 || index % 3 == 0 ? "s" : "t",
                                        priority: index % 4 == 0 ? 0.5 : 0.125)
            if index % 2 == 1 { download.metadata = #"{"n":\#(index),"note":"ünïcode \"quoted\", [x]\n"}"# }
            if index % 5 == 0 { download.expectedBytesToReceive = Int64(index) << 30 }
            if index % 7 == 0 { download.url = "http://example.com/a?b=%22c%22&d=\u{e9}&i=\(index)" }
            if index == 1050 { download.destination = Destination(stored: "busy") }
            let key = index == 1060 ? IdempotencyRecord(principal: "p", key: "k", bodySHA256: "h") : nil
            return NewJob(download: download, idempotency: key)
        }
        let outcomes = try store.insert(jobs)
        let created = zip(jobs, outcomes).compactMap { job, outcome in
            if case .created = outcome { job.download.id } else { nil }
        }
        #expect(created.count == count - 1)
        let logged = try store.loggedEvents(after: before, session: nil, limit: count)
        #expect(logged.map(\.downloadID) == created)
        for event in logged {
            let stored = try #require(try store.download(id: event.downloadID))
            #expect(event.payload == payload(stored), "\(event.downloadID)")
        }
        #expect(try store.loggedEvents(after: before, session: "t", limit: count).allSatisfy { $0.session == "t" })
    }

    /// A snapshot logged before an upgrade added columns: each added column reads as a new job's
    /// default for its field (what its migration gave the rows then stored), and the revision,
    /// last, stays the revision.
    @Test func aSnapshotFromBeforeAddedColumnsReadsThemAsANewJobsDefaults() throws {
        var download = makeDownload("01A")
        download.revision = 42
        // Written when the table ended at `mirrors`: without connections, … ranges.
        let kept = DownloadTable.position(of: "mirrors") + 1
        var json: [UInt8] = []
        NewRowSnapshot(id: "01A", session: "default", values: DownloadColumns.values(download).prefix(kept)).whole(into: &json)
        let older = String(decoding: json, as: UTF8.self).replacingOccurrences(of: ",0]", with: ",42]")
        let row = try #require(RowSnapshot(Array(older.utf8))).withColumnsAddedSince()
        #expect(row.columnCount == DownloadTable.columns.count)
        #expect(try DownloadColumns.download(row) == download)
        #expect(download.connections == 1, "a default other than NULL or 0")
    }

    /// A snapshot with fewer values than the table has columns (not one from before an upgrade)
    /// is a store error naming the first column it lacks.
    @Test func aSnapshotMissingAColumnIsAStoreError() throws {
        let values = DownloadColumns.values(makeDownload("01A"))
        var json: [UInt8] = []
        NewRowSnapshot(id: "01A", session: "default", values: values.prefix(3)).whole(into: &json)
        let row = try #require(RowSnapshot(Array(String(decoding: json, as: UTF8.self).replacingOccurrences(of: ",0]", with: "]").utf8)))
        #expect(throws: UnreadableJob(id: "01A", column: DownloadTable.names[3], problem: "is missing")) {
            try DownloadColumns.download(row)
        }
    }

    @Test func refusesWhatSQLiteDoesNotWrite() {
        for text in ["", "[", "[1,", "[1]x", "{\"a\":1}", "[\"\\q\"]", "[nul]", "[\"\\ud800\"]"] {
            #expect(RowSnapshot(Array(text.utf8)) == nil, "\(text)")
        }
        let row = RowSnapshot(Array(#"[-3,0.5,null,"a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00",1.0e+20]"#.utf8))
        #expect(row?.value(at: 0, as: .integer) == .integer(-3) && row?.value(at: 1, as: .real) == .real(0.5))
        #expect(row?.value(at: 2, as: .text) == .null && row?.columnCount == 5)
        #expect(row?.string(3) == "a\"\\/\u{8}\u{c}\n\r\té😀")
        #expect(row?.value(at: 4, as: .real) == .real(1e20))
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

    /// A store in a temporary directory whose log payload is every field of the Download, as a JSON
    /// string (a row of many events holds a JSON array of them).
    private func withStoreLoggingEveryField(_ body: (SQLiteStore, (Download) -> [UInt8]) throws -> Void) throws {
        let directory = NSTemporaryDirectory() + "fetchd-snapshot-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let payload: @Sendable (Download) -> [UInt8] = { download in
            var bytes: [UInt8] = []
            JSONString.append(String(reflecting: download), to: &bytes)
            return bytes
        }
        let store = try SQLiteStore(path: directory + "/fetchd.sqlite", statePayload: payload)
        defer { store.close() }
        try body(store, payload)
    }
}
