extension Sequence<String> {
    /// Sorted by UTF-8 bytes. String's `<` is no total order across normalization forms ("é."
    /// and "e\u{301}" are neither less than the other nor equal), so sorting a dictionary's keys
    /// by it follows the dictionary's order, which differs between equal dictionaries.
    public func sortedByUTF8() -> [String] {
        sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
}
