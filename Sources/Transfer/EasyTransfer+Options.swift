import CCurl

/// Setting one option of the easy handle, with libcurl's refusal as a `TransferFailure`.
extension EasyTransfer {
    func set(_ option: CURLoption, _ value: Int) throws(TransferFailure) {
        try check(fetchd_easy_setopt_long(handle, option, value), option)
    }

    func set(_ option: CURLoption, offset value: Int64) throws(TransferFailure) {
        try check(fetchd_easy_setopt_off(handle, option, curl_off_t(value)), option)
    }

    /// curl copies string options.
    func set(_ option: CURLoption, _ value: String) throws(TransferFailure) {
        try check(fetchd_easy_setopt_cstr(handle, option, value), option)
    }

    func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer) throws(TransferFailure) {
        try check(fetchd_easy_setopt_ptr(handle, option, value), option)
    }

    func check(_ code: CURLcode, _ option: CURLoption) throws(TransferFailure) {
        guard code == CURLE_OK else {
            throw .network("libcurl refused option \(option.rawValue): \(String(cString: curl_easy_strerror(code)))")
        }
    }
}
