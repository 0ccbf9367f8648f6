/// Why a request cannot be served: answered with a problem+json of `status` and the
/// connection closed, since the rest of the byte stream can no longer be framed reliably.
struct RequestRejection: Error, Equatable {
    var status: Int
    var detail: String

    init(_ status: Int, _ detail: String) {
        self.status = status
        self.detail = detail
    }
}
