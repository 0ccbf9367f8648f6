/// Decodes `%XX` escapes (and, for query components, `+` as space) into a UTF-8 string.
///
/// Malformed escapes such as `%zz` or a trailing `%` are kept literally rather than refused:
/// the router then simply finds no match, which is a clearer answer than a 400.
func percentDecoded(_ text: Substring, plusAsSpace: Bool) -> String {
    let utf8 = text.utf8
    guard utf8.contains(where: { $0 == UInt8(ascii: "%") || (plusAsSpace && $0 == UInt8(ascii: "+")) }) else {
        return String(text)
    }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(utf8.count)
    var index = utf8.startIndex
    while index != utf8.endIndex {
        let byte = utf8[index]
        if byte == UInt8(ascii: "%"),
           let high = utf8.index(index, offsetBy: 1, limitedBy: utf8.endIndex), high != utf8.endIndex,
           let low = utf8.index(high, offsetBy: 1, limitedBy: utf8.endIndex), low != utf8.endIndex,
           let h = hexValue(utf8[high]), let l = hexValue(utf8[low]) {
            bytes.append(h << 4 | l)
            index = utf8.index(after: low)
            continue
        }
        bytes.append(plusAsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
        index = utf8.index(after: index)
    }
    return String(decoding: bytes, as: UTF8.self)
}
