/// The XML body of CompleteMultipartUpload: every part by number and ETag, in part-number order.
enum CompleteMultipartUploadBody {
    static func xml(_ parts: [UploadedPart]) -> [UInt8] {
        var xml = #"<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">"#
        for part in parts.sorted(by: { $0.number < $1.number }) {
            xml += "<Part><PartNumber>\(part.number)</PartNumber><ETag>\(escaped(part.etag))</ETag></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        return Array(xml.utf8)
    }

    /// Text content: `&`, `<` and `>` escaped; the ETag's quotes are valid as they are.
    static func escaped(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            default: out.append(character)
            }
        }
        return out
    }
}
