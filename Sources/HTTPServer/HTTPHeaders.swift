/// HTTP header fields in the order they were received or added.
///
/// Lookup is case-insensitive (field names are ASCII, RFC 9110 §5.1); names keep the spelling
/// they were given with.
public struct HTTPHeaders: Sendable, Sequence {
    public typealias Element = (name: String, value: String)

    private var fields: [Element]

    public init(_ pairs: [(String, String)] = []) {
        fields = pairs.map { (name: $0.0, value: $0.1) }
    }

    /// The first value of the field `name`, or nil.
    public subscript(name: String) -> String? {
        for field in fields where equalsIgnoringASCIICase(field.name, name) {
            return field.value
        }
        return nil
    }

    /// Every value of the field `name`, in order.
    public func values(_ name: String) -> [String] {
        fields.compactMap { equalsIgnoringASCIICase($0.name, name) ? $0.value : nil }
    }

    public mutating func add(_ name: String, _ value: String) {
        fields.append((name: name, value: value))
    }

    /// Replaces every field called `name` with one field holding `value`.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        fields.append((name: name, value: value))
    }

    /// Removes every field called `name`.
    public mutating func remove(_ name: String) {
        fields.removeAll { equalsIgnoringASCIICase($0.name, name) }
    }

    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[Element]> {
        fields.makeIterator()
    }
}
