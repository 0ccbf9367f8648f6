import CSQLite
import DownloadCore
import Foundation
import Persistence

/// A session action's jobs for the event log, read from its UPDATE's RETURNING
/// (`StateLog.snapshotColumns`) and grouped into log rows of up to `StateLog.eventsPerRow` jobs of
/// one session. A row's first job is the whole snapshot of its downloads row (the JSON array
/// `RowSnapshot` reads); every other job is only the columns where its downloads row differs from
/// that first one, `[null, column, value, column, value, …]`, which `LogRow` fills in when the log
/// is read (`filled`). Jobs submitted alike differ in a few columns, so a pause of 100,000 jobs
/// writes a third of the bytes, and turns only those columns into JSON.
struct SnapshotRows {
    struct Run {
        var session: String
        var ids: [String] = []
        /// `[` and the snapshots so far, comma-separated.
        var elements: [UInt8] = [UInt8(ascii: "[")]

        /// What the log row stores: the one snapshot as it is, or the array of them.
        var payload: [UInt8] { ids.count == 1 ? Array(elements.dropFirst()) : elements + [UInt8(ascii: "]")] }
    }

    private(set) var runs: [Run] = []
    /// The changed jobs' ids, in order.
    private(set) var ids: [String] = []
    /// The current run's first job, column by column (the snapshot columns only): each column's
    /// type, its number (a REAL's bits) and its text's place in `baseText`. Kept flat so that
    /// comparing a job with it copies and retains nothing.
    private var baseTypes: [Int32] = []
    private var baseNumbers: [Int64] = []
    private var baseTextRanges: [Range<Int>] = []
    private var baseText: [UInt8] = []

    /// Where the job's id and session are in a row of `StateLog.snapshotColumns`.
    private static let idPosition = Int32(DownloadTable.position(of: "id"))
    private static let sessionPosition = Int32(DownloadTable.position(of: "session"))

    /// Adds the job of the current row of a statement returning `StateLog.snapshotColumns`. Reads
    /// the columns as values (`sqlite3_column_value`): one call into SQLite each instead of two or
    /// three, which matter at 47 columns × 100,000 jobs. Such a value is "unprotected", safe here as
    /// the connection is used by one thread at a time (`SQLiteStore`'s mutex) and the row not stepped past.
    mutating func add(_ row: Row) {
        let id = row.string(Self.idPosition), session = row.string(Self.sessionPosition)
        ids.append(id)
        let raw = row.raw, columns = sqlite3_column_count(raw)
        guard let last = runs.last, last.session == session, last.ids.count < StateLog.eventsPerRow else {
            startRun(session: session, id: id, raw, columns: columns)
            return
        }
        let current = runs.count - 1
        runs[current].ids.append(id)
        runs[current].elements += ",[null".utf8
        for column in 0..<columns {
            guard let value = sqlite3_column_value(raw, column) else { continue }
            let index = Int(column)
            if isBase(index, value) { continue }
            runs[current].elements.append(UInt8(ascii: ","))
            JSONNumber.append(Int64(index), to: &runs[current].elements)
            runs[current].elements.append(UInt8(ascii: ","))
            Self.appendJSON(value, to: &runs[current].elements)
        }
        runs[current].elements.append(UInt8(ascii: "]"))
    }

    /// A new log row, this job its whole snapshot and the base of the others.
    private mutating func startRun(session: String, id: String, _ raw: OpaquePointer, columns: Int32) {
        var run = Run(session: session)
        run.ids.append(id)
        baseTypes.removeAll(keepingCapacity: true)
        baseNumbers.removeAll(keepingCapacity: true)
        baseTextRanges.removeAll(keepingCapacity: true)
        baseText.removeAll(keepingCapacity: true)
        for column in 0..<columns {
            let value = sqlite3_column_value(raw, column)
            let type = sqlite3_value_type(value)
            baseTypes.append(type)
            baseNumbers.append(type == SQLITE_FLOAT ? Int64(bitPattern: sqlite3_value_double(value).bitPattern) : sqlite3_value_int64(value))
            let start = baseText.count
            if type == SQLITE_TEXT || type == SQLITE_BLOB { baseText += Self.text(value) }
            baseTextRanges.append(start..<baseText.count)
            run.elements.append(column == 0 ? UInt8(ascii: "[") : UInt8(ascii: ","))
            Self.appendJSON(value, to: &run.elements)
        }
        run.elements.append(UInt8(ascii: "]"))
        runs.append(run)
    }

    /// Whether the column holds what the run's first job holds there, compared in place.
    private func isBase(_ index: Int, _ value: OpaquePointer) -> Bool {
        let type = sqlite3_value_type(value)
        guard baseTypes[index] == type else { return false }
        switch type {
        case SQLITE_NULL: return true
        case SQLITE_INTEGER: return baseNumbers[index] == sqlite3_value_int64(value)
        case SQLITE_FLOAT: return baseNumbers[index] == Int64(bitPattern: sqlite3_value_double(value).bitPattern)
        default:
            let text = Self.text(value), range = baseTextRanges[index]
            guard text.count == range.count else { return false }
            guard let pointer = text.baseAddress else { return true }
            return baseText.withUnsafeBufferPointer { base in
                base.baseAddress.map { memcmp($0 + range.lowerBound, pointer, range.count) == 0 } ?? false
            }
        }
    }

    /// The whole snapshot a stored `[null, column, value, …]` stands for: `base` (the elements of
    /// its row's first snapshot) with those columns replaced. nil when `diff` is not such an array.
    static func filled(_ diff: ArraySlice<UInt8>, from base: [ArraySlice<UInt8>]) -> [UInt8]? {
        guard diff.starts(with: "[null".utf8), let parts = JSONArrayElements.split(Array(diff)), parts.count % 2 == 1 else {
            return nil
        }
        var values = base
        for pair in stride(from: 1, to: parts.count, by: 2) {
            guard let column = Int(String(decoding: parts[pair], as: UTF8.self)), values.indices.contains(column) else { return nil }
            values[column] = parts[pair + 1]
        }
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes += value
        }
        bytes.append(UInt8(ascii: "]"))
        return bytes
    }

    /// The column as JSON, as `RowSnapshot` reads it back: a REAL with a `.` or exponent, so it
    /// stays a REAL (`json_array`'s rule too).
    private static func appendJSON(_ value: OpaquePointer?, to bytes: inout [UInt8]) {
        switch sqlite3_value_type(value) {
        case SQLITE_NULL: bytes += "null".utf8
        case SQLITE_INTEGER: JSONNumber.append(sqlite3_value_int64(value), to: &bytes)
        case SQLITE_FLOAT: bytes += String(sqlite3_value_double(value)).utf8
        default: JSONString.append(String(decoding: text(value), as: UTF8.self), to: &bytes)
        }
    }

    /// A column's text, valid until the statement steps on.
    private static func text(_ value: OpaquePointer?) -> UnsafeBufferPointer<UInt8> {
        guard let pointer = sqlite3_value_text(value) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: pointer, count: Int(sqlite3_value_bytes(value)))
    }
}
