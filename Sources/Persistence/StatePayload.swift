import DownloadCore

/// What the event log holds for a job when the store was opened without the service's encoder
/// (tests, tools): its id, session and state as JSON.
public enum StatePayload {
    public static func minimal(_ download: Download) -> [UInt8] {
        var bytes = Array(#"{"id":"#.utf8)
        JSONString.append(download.id, to: &bytes)
        bytes += Array(#","session":"#.utf8)
        JSONString.append(download.session, to: &bytes)
        bytes += Array(#","state":"#.utf8)
        JSONString.append(download.state.rawValue, to: &bytes)
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }
}
