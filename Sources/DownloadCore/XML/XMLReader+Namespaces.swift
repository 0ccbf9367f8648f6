/// Namespaces in XML 1.0, as far as they decide whether a document is well-formed: names are
/// `prefix:local` at most, each prefix declared where it is used, and no attribute named twice
/// once prefixes are read as their namespaces.
extension XMLReader {
    static let xmlNamespace = "http://www.w3.org/XML/1998/namespace"
    static let xmlnsNamespace = "http://www.w3.org/2000/xmlns/"

    /// The prefixes an element's `xmlns:prefix` attributes declare, by prefix.
    func declaredPrefixes(_ attributes: [(name: String, value: String)]) throws(Failure) -> [String: String] {
        var prefixes: [String: String] = [:]
        for (name, namespace) in attributes where name.hasPrefix("xmlns:") {
            let prefix = String(name.dropFirst("xmlns:".count))
            guard Self.isLocalName(prefix), prefix != "xmlns", !namespace.isEmpty,
                  (prefix == "xml") == (namespace == Self.xmlNamespace), namespace != Self.xmlnsNamespace
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
            guard prefix != "xmlns", namespace(of: prefix) != nil else { throw failure("undeclared namespace prefix in \(element)") }
        }
        var expanded: Set<[String]> = []
        for (name, _) in attributes where name != "xmlns" && !name.hasPrefix("xmlns:") {
            guard let prefix = try namespacePrefix(of: name) else { continue }
            guard let namespace = namespace(of: prefix) else { throw failure("undeclared namespace prefix in \(name)") }
            guard expanded.insert([namespace, String(name.dropFirst(prefix.count + 1))]).inserted else {
                throw failure("attribute \(name) given twice in one namespace")
            }
        }
    }

    /// The prefix of a qualified name, nil when it has none; a failure when it is no qualified name.
    private func namespacePrefix(of name: String) throws(Failure) -> String? {
        let parts = name.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, parts.allSatisfy({ Self.isLocalName($0) }) else { throw failure("\(name) is not a qualified name") }
        return parts.count == 2 ? String(parts[0]) : nil
    }

    /// The namespace a prefix stands for in the innermost open element, nil if none declares it.
    private func namespace(of prefix: String) -> String? {
        if prefix == "xml" { return Self.xmlNamespace }
        return open.reversed().lazy.compactMap { $0.prefixes[prefix] }.first
    }

    /// `NCName`: a name without a colon.
    private static func isLocalName(_ name: some StringProtocol) -> Bool {
        guard let first = name.unicodeScalars.first, first != ":", isNameStart(first) else { return false }
        return !name.contains(":")
    }
}
