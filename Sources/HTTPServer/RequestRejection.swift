/// Why a request cannot be served: answered with a problem+json of `status` and the
/// connection closed, since the rest of the byte stream can no longer be framed reliably.
package struct RequestRejection: Error, Equatable {
    package var status: Int
    package var detail: String

    init(_ status: Int, _ detail: String) {
        self.status = status
        self.detail = detail
    }
}
