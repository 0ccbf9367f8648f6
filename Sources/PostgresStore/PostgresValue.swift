import CPostgres
import DownloadCore
import Foundation

/// A statement parameter. Every parameter but `bytes` goes in PostgreSQL's text format and takes
/// the type the statement gives its placeholder; `bytes` goes in binary format, for `bytea`.
enum PostgresValue: Equatable {
    case null
    case integer(Int64)
    case double(Double)
    case text(String)
    case bool(Bool)
    case bytes([UInt8])
    /// A `text[]`, for `= ANY($n::text[])`.
    case textArray([String])

    static func optional(_ value: Int64?) -> PostgresValue { value.map(PostgresValue.integer) ?? .null }
    static func optional(_ value: Int?) -> PostgresValue { value.map { .integer(Int64($0)) } ?? .null }
    static func optional(_ value: String?) -> PostgresValue { value.map(PostgresValue.text) ?? .null }

    /// The bytes libpq sends, nil for SQL NULL.
    var wireBytes: [UInt8]? {
        switch self {
        case .null: return nil
        case .integer(let v): return Array(String(v).utf8)
        // Swift prints the shortest text that reads back as the same Double, and so does PostgreSQL.
        case .double(let v): return Array("\(v)".utf8)
        case .text(let v): return Array(v.utf8)
        case .bool(let v): return Array((v ? "t" : "f").utf8)
        case .bytes(let v): return v
        case .textArray(let v): return Self.arrayLiteral(v)
        }
    }

    /// The value as a JSON member for `json_populate_recordset`, which reads a JSON string with
    /// the column type's text input, as it reads a text-format parameter.
    var json: String {
        switch self {
        case .null: return "null"
        case .integer(let v): return String(v)
        case .double(let v) where v.isFinite: return "\(v)"
        case .bool(let v): return v ? "true" : "false"
        case .bytes(let v): return Self.jsonString("\\x" + v.hex)
        default: return Self.jsonString(String(decoding: wireBytes ?? [], as: UTF8.self))
        }
    }

    /// Rows for `json_populate_recordset`: a JSON array of objects, `columns[i]` holding `row[i]`.
    /// A null is left out (the function reads a missing key as null), so the server parses less.
    static func json(_ rows: [[PostgresValue]], columns: [String]) -> String {
        "[" + rows.map { row in
            "{" + zip(columns, row).compactMap { $1 == .null ? nil : "\"\($0)\":\($1.json)" }.joined(separator: ",") + "}"
        }.joined(separator: ",") + "]"
    }

    private static func jsonString(_ text: String) -> String {
        var out: [UInt8] = []
        JSONString.append(text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    var isBinary: Bool {
        if case .bytes = self { return true }
        return false
    }

    /// `{"a","b"}` with quotes and backslashes escaped, byte by byte (the event log's payloads
    /// make these long).
    private static func arrayLiteral(_ items: [String]) -> [UInt8] {
        let (quote, backslash) = (UInt8(ascii: "\""), UInt8(ascii: "\\"))
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(items.reduce(2) { $0 + $1.utf8.count + 3 })
        for (index, item) in items.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(quote)
            var item = item
            item.withUTF8 { utf8 in
                // Runs between escapes copied whole (hex payloads have none).
                var runStart = 0
                for (offset, byte) in utf8.enumerated() where byte == quote || byte == backslash {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<offset]))
                    out.append(backslash)
                    runStart = offset
                }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
            }
            out.append(quote)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }
}

/// One row of a result in text format; valid only inside the `query` closure.
struct PostgresRow {
    let result: OpaquePointer
    let row: Int32

    func isNull(_ column: Int32) -> Bool { PQgetisnull(result, row, column) != 0 }
    func string(_ column: Int32) -> String {
        guard let text = PQgetvalue(result, row, column) else { return "" }
        return String(cString: text)
    }
    func optionalString(_ column: Int32) -> String? { isNull(column) ? nil : string(column) }
    func int64(_ column: Int32) -> Int64 { Int64(string(column)) ?? 0 }
    func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }
    func int(_ column: Int32) -> Int { Int(int64(column)) }
    func optionalInt(_ column: Int32) -> Int? { isNull(column) ? nil : int(column) }
    func bool(_ column: Int32) -> Bool { string(column) == "t" }

    /// A `bytea` in text format: `\x` and two hex digits a byte.
    func bytes(_ column: Int32) -> [UInt8] {
        let hex = Array(string(column).utf8.dropFirst(2))
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.count / 2)
        var index = 0
        while index + 1 < hex.count {
            bytes.append(Self.nibble(hex[index]) << 4 | Self.nibble(hex[index + 1]))
            index += 2
        }
        return bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8 {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        default: return digit &- UInt8(ascii: "A") &+ 10
        }
    }
}
