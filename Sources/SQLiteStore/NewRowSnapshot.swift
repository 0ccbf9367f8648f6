import DownloadCore

/// A new downloads row for the event log, in the form `SnapshotRows` gives a session action's
/// rows: the JSON array `RowSnapshot` reads (the written values, then the revision, 0), or, for
/// every job of a log row after its first, only the columns where it differs from that first one,
/// `[null, column, value, …]` (`SnapshotRows.filled` reads it back). A batch's jobs differ in a few
/// columns (id, destination), so its log takes a fifth of the bytes it would whole.
/// Written on the store's one writer for every new job: no String is made for a number or a null.
struct NewRowSnapshot {
    var id: String
    var session: String
    /// The row's written values (`DownloadColumns.values`), in the list a statement bound.
    var values: ArraySlice<SQLValue>

    /// The whole snapshot.
    func whole(into json: inout [UInt8]) {
        json.append(UInt8(ascii: "["))
        for value in values {
            Self.append(value, to: &json)
            json.append(UInt8(ascii: ","))
        }
        json.append(UInt8(ascii: "0"))
        json.append(UInt8(ascii: "]"))
    }

    /// What differs from `base` (a new row too, so its revision is the same, 0).
    func difference(from base: NewRowSnapshot, into json: inout [UInt8]) {
        json += "[null".utf8
        // Both rows' values may be slices of larger lists: column `c` is at `start + c` in each.
        let (start, baseStart) = (values.startIndex, base.values.startIndex)
        for column in 0..<values.count {
            let value = values[start + column]
            if column < base.values.count, value == base.values[baseStart + column] { continue }
            json.append(UInt8(ascii: ","))
            JSONNumber.append(Int64(column), to: &json)
            json.append(UInt8(ascii: ","))
            Self.append(value, to: &json)
        }
        json.append(UInt8(ascii: "]"))
    }

    /// A value as `RowSnapshot` reads it back: a REAL with a `.` or exponent, so it stays a REAL.
    private static func append(_ value: SQLValue, to json: inout [UInt8]) {
        switch value {
        case .null: json += "null".utf8
        case .integer(let number): JSONNumber.append(number, to: &json)
        case .real(let number): json += (number.isFinite ? "\(number)" : "null").utf8
        case .text(let text): JSONString.append(text, to: &json)
        // No written column is a blob; were one, its bytes would go as text.
        case .blob(let bytes): JSONString.append(String(decoding: bytes, as: UTF8.self), to: &json)
        }
    }
}
