import DownloadCore

/// Writes JSON straight into bytes, in field order. Faster than JSONEncoder for the hot paths
/// (every API response and webhook), and keeps `null` fields explicit as the contract shows them.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []
    private var needsComma: [Bool] = []

    init(capacity: Int = 512) { bytes.reserveCapacity(capacity) }

    mutating func beginObject() { separator(); bytes.append(UInt8(ascii: "{")); needsComma.append(false) }
    mutating func endObject() { bytes.append(UInt8(ascii: "}")); needsComma.removeLast() }
    mutating func beginArray() { separator(); bytes.append(UInt8(ascii: "[")); needsComma.append(false) }
    mutating func endArray() { bytes.append(UInt8(ascii: "]")); needsComma.removeLast() }

    /// A key written in the source: copied as it is, since no key this writer is given needs escaping.
    mutating func key(_ name: StaticString) {
        separator()
        bytes.append(UInt8(ascii: "\""))
        if name.hasPointerRepresentation {
            bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        } else {
            name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        }
        bytes.append(UInt8(ascii: "\""))
        endKey()
    }

    /// A key made at run time (a state's name), escaped.
    mutating func key(text name: String) {
        separator()
        string(name)
        endKey()
    }

    private mutating func endKey() {
        bytes.append(UInt8(ascii: ":"))
        // The value that follows must not write another comma.
        needsComma[needsComma.count - 1] = false
    }

    mutating func value(_ text: String?) { separator(); if let text { string(text) } else { null() } }
    mutating func value(_ number: Int64?) { separator(); if let number { bytes.append(contentsOf: String(number).utf8) } else { null() } }
    mutating func value(_ number: Int?) { value(number.map(Int64.init)) }
    mutating func value(_ number: Double) { separator(); bytes.append(contentsOf: (number.isFinite ? "\(number)" : "null").utf8) }
    mutating func value(_ flag: Bool) { separator(); bytes.append(contentsOf: (flag ? "true" : "false").utf8) }
    mutating func raw(_ json: [UInt8]) { separator(); bytes.append(contentsOf: json) }

    mutating func field(_ name: StaticString, _ text: String?) { key(name); value(text) }
    mutating func field(_ name: StaticString, _ number: Int64?) { key(name); value(number) }
    mutating func field(_ name: StaticString, _ number: Int?) { key(name); value(number) }
    mutating func field(_ name: StaticString, _ number: Double) { key(name); value(number) }
    mutating func field(_ name: StaticString, _ flag: Bool) { key(name); value(flag) }

    private mutating func null() { bytes.append(contentsOf: "null".utf8) }

    private mutating func separator() {
        guard let last = needsComma.last else { return }
        if last { bytes.append(UInt8(ascii: ",")) }
        needsComma[needsComma.count - 1] = true
    }

    private mutating func string(_ text: String) {
        JSONString.append(text, to: &bytes)
    }
}
