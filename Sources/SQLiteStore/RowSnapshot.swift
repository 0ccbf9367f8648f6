import DownloadCore
import Persistence

/// A downloads row as the event log keeps it for a session action: a JSON array of numbers, strings
/// and nulls only (SQLite's `json_array` wrote those logged before `SnapshotRows`, which writes the
/// same), read back column by column like a `Row`, so `DownloadColumns.download` decodes it without
/// a statement.
struct RowSnapshot: ColumnReading {
    private let values: [SQLValue]

    /// nil when `bytes` is not such an array.
    init?(_ bytes: [UInt8]) {
        var parser = Parser(bytes: bytes)
        guard let values = parser.array() else { return nil }
        self.values = values
    }

    private init(values: [SQLValue]) {
        self.values = values
    }

    /// The snapshot of a `DownloadColumns.list` row with as many values as that list has now. One
    /// logged before an upgrade added columns has fewer; since new columns go at the end of the
    /// written ones and `revision` always comes last, the missing ones go in before it, each as
    /// the migration that added it filled the rows then stored (`DownloadTable.valueBeforeAdded`).
    func withColumnsAddedSince() -> RowSnapshot {
        let expected = DownloadTable.columns.count
        guard values.count < expected, let revision = values.last else { return self }
        let added = (values.count - 1..<expected - 1).map { SQLValue(DownloadTable.valueBeforeAdded(column: $0)) }
        return RowSnapshot(values: values.dropLast() + added + [revision])
    }

    /// How many values it holds.
    var columnCount: Int { values.count }

    func value(at position: Int, as kind: ColumnKind) -> ColumnValue {
        values[position].column(as: kind)
    }

    /// The text at `position`, "" if it holds none (an event log row's ids are such an array).
    func string(_ position: Int) -> String {
        guard position < values.count, case .text(let text) = values[position] else { return "" }
        return text
    }

    /// The JSON SQLite writes: no whitespace, strings escaped with `\"`, `\\`, `\/`, `\b`, `\f`,
    /// `\n`, `\r`, `\t` and `\uXXXX`; anything else is refused.
    private struct Parser {
        let bytes: [UInt8]
        var at = 0

        mutating func array() -> [SQLValue]? {
            guard next() == UInt8(ascii: "[") else { return nil }
            var values: [SQLValue] = []
            if peek() == UInt8(ascii: "]") { at += 1; return at == bytes.count ? values : nil }
            while true {
                guard let value = scalar() else { return nil }
                values.append(value)
                switch next() {
                case UInt8(ascii: ","): continue
                case UInt8(ascii: "]"): return at == bytes.count ? values : nil
                default: return nil
                }
            }
        }

        private mutating func scalar() -> SQLValue? {
            switch peek() {
            case UInt8(ascii: "\""): return string().map(SQLValue.text)
            case UInt8(ascii: "n"):
                guard bytes[at...].starts(with: "null".utf8) else { return nil }
                at += 4
                return .null
            default: return number()
            }
        }

        private mutating func number() -> SQLValue? {
            let start = at
            var isInteger = true
            while let byte = peek(), byte != UInt8(ascii: ","), byte != UInt8(ascii: "]") {
                if !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte), byte != UInt8(ascii: "-") { isInteger = false }
                at += 1
            }
            let text = String(decoding: bytes[start..<at], as: UTF8.self)
            if isInteger, let value = Int64(text) { return .integer(value) }
            return Double(text).map(SQLValue.real)
        }

        private mutating func string() -> String? {
            at += 1
            var out: [UInt8] = []
            while let byte = next() {
                switch byte {
                case UInt8(ascii: "\""): return String(decoding: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard let escaped = next() else { return nil }
                    if let plain = JSONString.unescaped(escaped) {
                        out.append(plain)
                        continue
                    }
                    guard escaped == UInt8(ascii: "u"), let unit = hex4() else { return nil }
                    var scalar = unit
                    // A surrogate pair, as JSON may spell a character outside the BMP (SQLite
                    // itself writes those as UTF-8 and escapes only control characters).
                    if (0xD800..<0xDC00).contains(unit), next() == UInt8(ascii: "\\"), next() == UInt8(ascii: "u"),
                       let low = hex4(), (0xDC00..<0xE000).contains(low) {
                        scalar = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let character = Unicode.Scalar(scalar) else { return nil }
                    out += Array(String(Character(character)).utf8)
                default: out.append(byte)
                }
            }
            return nil
        }

        private mutating func hex4() -> UInt32? {
            guard at + 4 <= bytes.count, let value = UInt32(String(decoding: bytes[at..<at + 4], as: UTF8.self), radix: 16) else {
                return nil
            }
            at += 4
            return value
        }

        private func peek() -> UInt8? { at < bytes.count ? bytes[at] : nil }

        private mutating func next() -> UInt8? {
            defer { at += 1 }
            return peek()
        }
    }
}
