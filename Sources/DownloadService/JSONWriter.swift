import DownloadCore

/// Writes JSON straight into bytes, in field order. Faster than JSONEncoder for the hot paths
/// (every API response and webhook), and keeps `null` fields explicit as the contract shows them.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []
    /// Per open object or array, innermost in bit `depth - 1`: whether its next value needs a
    /// comma first. Bits, not a stack array: this is asked before every value of every response.
    /// The writers nest a few levels, never 64.
    private var needsComma: UInt64 = 0
    private var depth = 0

    init(capacity: Int = 512) { bytes.reserveCapacity(capacity) }

    mutating func beginObject() { begin(UInt8(ascii: "{")) }
    mutating func endObject() { end(UInt8(ascii: "}")) }
    mutating func beginArray() { begin(UInt8(ascii: "[")) }
    mutating func endArray() { end(UInt8(ascii: "]")) }

    private mutating func begin(_ bracket: UInt8) {
        separator()
        bytes.append(bracket)
        assert(depth < 64, "JSON nested deeper than JSONWriter keeps")
        depth += 1
        needsComma &= ~innermost
    }

    private mutating func end(_ bracket: UInt8) {
        bytes.append(bracket)
        depth -= 1
    }

    private var innermost: UInt64 { 1 << UInt64(depth - 1) }

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
        needsComma &= ~innermost
    }

    mutating func value(_ text: String?) { separator(); if let text { string(text) } else { null() } }
    mutating func value(_ number: Int64?) { separator(); if let number { JSONNumber.append(number, to: &bytes) } else { null() } }
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
        guard depth > 0 else { return }
        if needsComma & innermost != 0 { bytes.append(UInt8(ascii: ",")) }
        needsComma |= innermost
    }

    private mutating func string(_ text: String) {
        JSONString.append(text, to: &bytes)
    }
}
