/// Namespaces in XML 1.0, as far as they decide whether a document is well-formed: names are
/// `prefix:local` at most, each prefix declared where it is used, and no attribute named twice
/// once prefixes are read as their namespaces. Names are compared, split and looked up by their
/// code points, as XML compares them: a String's `==`, `split` and hashing go by characters,
/// which would join `:` to a combining mark after it and take canonically equivalent names for one.
extension XMLReader {
    static let xmlNamespace = "http://www.w3.org/XML/1998/namespace"
    static let xmlnsNamespace = "http://www.w3.org/2000/xmlns/"
    private static let xmlPrefix = Array("xml".utf8)
    private static let xmlnsPrefix = Array("xmlns".utf8)

    /// Whether an attribute named so declares a namespace prefix (`xmlns:p`).
    private static func declaresPrefix(_ name: String) -> Bool {
        name.utf8.starts(with: "xmlns:".utf8)
    }

    /// The prefixes an element's `xmlns:prefix` attributes declare, by prefix.
    func declaredPrefixes(_ attributes: [(name: String, value: String)]) throws(Failure) -> [[UInt8]: String] {
        var prefixes: [[UInt8]: String] = [:]
        for (name, namespace) in attributes where Self.declaresPrefix(name) {
            let prefix = Array(name.utf8.dropFirst("xmlns:".utf8.count))
            guard Self.isLocalName(prefix[...]), prefix != Self.xmlnsPrefix, !namespace.isEmpty,
                  (prefix == Self.xmlPrefix) == (namespace == Self.xmlNamespace), namespace != Self.xmlnsNamespace
            else { throw failure("a namespace declaration XML does not allow: \(name)") }
            prefixes[prefix] = namespace
        }
        if let namespace = attributes.first(where: { $0.name == "xmlns" })?.value,
           namespace == Self.xmlNamespace || namespace == Self.xmlnsNamespace {
            throw failure("a default namespace XML reserves: \(namespace)")
        }
        return prefixes
    }

    /// Checks the names of the element just opened and of its attributes against the prefixes in
    /// scope there.
    func checkNamespaces(of element: String, attributes: [(name: String, value: String)]) throws(Failure) {
        if let prefix = try namespacePrefix(of: element) {
            guard prefix != Self.xmlnsPrefix, namespace(of: prefix) != nil else {
                throw failure("undeclared namespace prefix in \(element)")
            }
        }
        var expanded: Set<[UInt8]> = []
        for (name, _) in attributes where name != "xmlns" && !Self.declaresPrefix(name) {
            guard let prefix = try namespacePrefix(of: name) else { continue }
            guard let namespace = namespace(of: prefix) else { throw failure("undeclared namespace prefix in \(name)") }
            // The namespace and the local name, apart by a NUL, which no XML text holds.
            guard expanded.insert(Array(namespace.utf8) + [0] + name.utf8.dropFirst(prefix.count + 1)).inserted else {
                throw failure("attribute \(name) given twice in one namespace")
            }
        }
    }

    /// The prefix of a qualified name, nil when it has none; a failure when it is no qualified name.
    private func namespacePrefix(of name: String) throws(Failure) -> [UInt8]? {
        let parts = Array(name.utf8).split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
        guard parts.count <= 2, parts.allSatisfy({ Self.isLocalName($0) }) else { throw failure("\(name) is not a qualified name") }
        return parts.count == 2 ? Array(parts[0]) : nil
    }

    /// The namespace a prefix stands for in the innermost open element, nil if none declares it.
    private func namespace(of prefix: [UInt8]) -> String? {
        if prefix == Self.xmlPrefix { return Self.xmlNamespace }
        return open.reversed().lazy.compactMap { $0.prefixes[prefix] }.first
    }

    /// `NCName`: a name without a colon (its UTF-8).
    private static func isLocalName(_ name: ArraySlice<UInt8>) -> Bool {
        guard let first = String(decoding: name, as: UTF8.self).unicodeScalars.first, isNameStart(first) else { return false }
        return !name.contains(UInt8(ascii: ":"))
    }
}
