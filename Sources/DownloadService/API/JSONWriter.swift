import DownloadCore

/// Writes JSON straight into bytes, in field order. Faster than JSONEncoder for the hot paths
/// (every API response and webhook), and keeps `null` fields explicit as the contract shows them.
///
/// The bytes go into memory of its own, grown by doubling, not into an Array: an Array append
/// checks uniqueness and capacity and goes through a generic copy for every piece, which made a
/// Download's JSON (33 keys, ~700 bytes) cost ~1.4 µs, 8 % of a batch job's CPU; written here it
/// costs ~0.6 µs. Noncopyable, so that the memory has one owner, which frees it.
struct JSONWriter: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    /// Bytes written.
    private(set) var count = 0
    private var capacity: Int
    /// Per open object or array, innermost in bit `depth - 1`: whether its next value needs a
    /// comma first. Bits, not a stack array: this is asked before every value of every response.
    /// The writers nest a few levels, never 64.
    private var needsComma: UInt64 = 0
    private var depth = 0
    /// The last number written as a Double, and its text: a list's jobs mostly share a priority,
    /// and writing one afresh (its shortest digits, into a new String) costs ~110 ns.
    private var lastNumber: (bits: UInt64, text: [UInt8])?

    init(capacity: Int = 512) {
        self.capacity = max(capacity, 64)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// What was written, as an Array (a copy).
    var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    mutating func beginObject() { begin(UInt8(ascii: "{")) }
    mutating func endObject() { end(UInt8(ascii: "}")) }
    mutating func beginArray() { begin(UInt8(ascii: "[")) }
    mutating func endArray() { end(UInt8(ascii: "]")) }

    private mutating func begin(_ bracket: UInt8) {
        separator()
        put(bracket)
        assert(depth < 64, "JSON nested deeper than JSONWriter keeps")
        depth += 1
        needsComma &= ~innermost
    }

    private mutating func end(_ bracket: UInt8) {
        put(bracket)
        depth -= 1
    }

    private var innermost: UInt64 { 1 << UInt64(depth - 1) }

    /// A key written in the source: copied as it is, since no key this writer is given needs escaping.
    mutating func key(_ name: StaticString) {
        separator()
        let length = name.utf8CodeUnitCount
        reserve(length + 2)
        let destination = base + count
        destination[0] = UInt8(ascii: "\"")
        // Byte by byte: keys are short, and a memmove call for each costs more than the copy.
        name.withUTF8Buffer { source in
            for index in 0..<length { destination[1 + index] = source[index] }
        }
        destination[length + 1] = UInt8(ascii: "\"")
        count += length + 2
        endKey()
    }

    /// A key made at run time (a state's name), escaped.
    mutating func key(text name: String) {
        separator()
        string(name)
        endKey()
    }

    private mutating func endKey() {
        put(UInt8(ascii: ":"))
        // The value that follows must not write another comma.
        needsComma &= ~innermost
    }

    mutating func value(_ text: String?) { separator(); if let text { string(text) } else { put("null") } }

    mutating func value(_ number: Int64?) {
        separator()
        guard let number else { return put("null") }
        reserve(JSONNumber.maxLength)
        count += JSONNumber.write(number, to: base + count)
    }

    mutating func value(_ number: Int?) { value(number.map(Int64.init)) }

    mutating func value(_ number: Double) {
        separator()
        guard number.isFinite else { return put("null") }
        if let last = lastNumber, last.bits == number.bitPattern { return last.text.withUnsafeBufferPointer { put($0) } }
        let text = Array("\(number)".utf8)
        text.withUnsafeBufferPointer { put($0) }
        lastNumber = (number.bitPattern, text)
    }

    /// A date-time as `RFC3339.format` writes it, or `null`: written in place, with no String made.
    mutating func value(date millis: Int64?) {
        guard let millis else { return value(nil as String?) }
        separator()
        reserve(RFC3339.length + 2)
        let quoted = UnsafeMutableBufferPointer(start: base + count, count: RFC3339.length + 2)
        guard let written = RFC3339.write(millis, to: UnsafeMutableBufferPointer(rebasing: quoted[1...])) else {
            return string(RFC3339.format(millis))
        }
        quoted[0] = UInt8(ascii: "\"")
        quoted[written + 1] = UInt8(ascii: "\"")
        count += written + 2
    }

    mutating func value(_ flag: Bool) { separator(); put(flag ? "true" : "false") }
    mutating func raw(_ json: [UInt8]) { separator(); json.withUnsafeBufferPointer { put($0) } }

    /// `"name": <json>` for JSON text written before (a job's `metadata`, a reply), or `null`.
    mutating func rawField(_ name: StaticString, _ json: String?) {
        key(name)
        if let json { raw(Array(json.utf8)) } else { value(nil as String?) }
    }

    mutating func field(_ name: StaticString, _ text: String?) { key(name); value(text) }
    mutating func field(_ name: StaticString, _ number: Int64?) { key(name); value(number) }
    mutating func field(_ name: StaticString, _ number: Int?) { key(name); value(number) }
    mutating func field(_ name: StaticString, _ number: Double) { key(name); value(number) }
    mutating func field(_ name: StaticString, _ flag: Bool) { key(name); value(flag) }
    mutating func field(_ name: StaticString, date millis: Int64?) { key(name); value(date: millis) }
    mutating func field(_ name: StaticString, _ texts: [String]) {
        key(name)
        beginArray()
        for text in texts { value(text) }
        endArray()
    }

    private mutating func separator() {
        guard depth > 0 else { return }
        if needsComma & innermost != 0 { put(UInt8(ascii: ",")) }
        needsComma |= innermost
    }

    /// A quoted string: copied whole when nothing in it needs escaping, as nearly every one.
    private mutating func string(_ text: String) {
        var text = text
        let copied = text.withUTF8 { utf8 in
            guard !utf8.contains(where: JSONString.needsEscape) else { return false }
            reserve(utf8.count + 2)
            put(UInt8(ascii: "\""))
            put(utf8)
            put(UInt8(ascii: "\""))
            return true
        }
        guard !copied else { return }
        var escaped: [UInt8] = []
        JSONString.append(text, to: &escaped)
        escaped.withUnsafeBufferPointer { put($0) }
    }

    // MARK: The memory

    private mutating func reserve(_ needed: Int) {
        if capacity - count < needed { grow(needed) }
    }

    private mutating func grow(_ needed: Int) {
        let newCapacity = max(capacity * 2, count + needed)
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.update(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    private mutating func put(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count += 1
    }

    private mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress else { return }
        reserve(bytes.count)
        (base + count).update(from: source, count: bytes.count)
        count += bytes.count
    }

    private mutating func put(_ text: StaticString) {
        text.withUTF8Buffer { put($0) }
    }
}
