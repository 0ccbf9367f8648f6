import CCurl

/// An upload to an `ftp://`, `ftps://` or `sftp://` URL (`TransferRequest.appendsAtServerSize`):
/// to go on from the server's size, curl seeks the body's reader there and sends the rest.
extension EasyTransfer {
    /// Where in the source this attempt's sending started: curl lowers the upload size by the
    /// server's size once it knows it (before that the upload size is the whole source's, or
    /// unknown, and nothing has been sent).
    var remoteUploadOffset: Int64 {
        guard let reader = bodyReader else { return 0 }
        var left: curl_off_t = -1
        guard fetchd_easy_getinfo_off(handle, CURLINFO_CONTENT_LENGTH_UPLOAD_T, &left) == CURLE_OK, left >= 0 else { return 0 }
        return max(0, reader.length - Int64(left))
    }

    /// Bytes of the source the server holds, as far as this attempt knows: what an upload's
    /// progress shows.
    var bytesSent: Int64 {
        remoteScheme == nil ? Int64(uploaded) : remoteUploadOffset + Int64(uploaded)
    }

    /// The result's `bytesOnDisk` of a remote upload: what the server holds, which the next
    /// attempt appends to. A server's file longer than the source is none of this upload's: the
    /// next attempt starts over from byte 0.
    func remoteUploadResult(_ failure: TransferFailure?) -> Int64 {
        if case .rangeMismatch? = failure { return 0 }
        return bytesSent
    }
}
