import CCurl

/// Setting one option of the easy handle, with libcurl's refusal as a `TransferFailure`, and the
/// values some options take.
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

    /// 256 KiB for throughput (`MultiDriver` gives less when many transfers run). But libcurl 7.88
    /// checks the receive speed limit only between socket events, and reads up to 100 buffers per event while the socket stays readable, so a
    /// throttled transfer gets a buffer small enough to keep those bursts to about 1/10 s (but
    /// not under 1 KiB, curl's minimum).
    static func bufferSize(throttledTo speed: Int64?) -> Int {
        let full = 256 * 1024
        guard let speed else { return full }
        return Int(min(Int64(full), max(1024, speed / 1000)))
    }

    static func milliseconds(_ seconds: Double) -> Int {
        Int((max(0, seconds) * 1000).rounded(.up))
    }

    static func isSafeHeader(_ name: String, _ value: String) -> Bool {
        !name.isEmpty && !(name + value).utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 }
    }
}
