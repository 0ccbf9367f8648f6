import CCurl

/// Hops through a proxy, and redirects fetchd follows itself: on the engine queue, with the
/// handle outside the multi handle.
extension EasyTransfer {
    var addressPolicy: AddressPolicy { request.addressPolicy }

    /// Sets the proxy (or none) and the pinned address for the next hop.
    func take(_ route: HopRoute) throws(TransferFailure) {
        viaProxy = route.proxy != nil
        try set(CURLOPT_PROXY, viaProxy ? network.proxy?.url ?? "" : "")
        curl_slist_free_all(pinnedAddress)
        pinnedAddress = nil
        if let connectTo = route.connectTo {
            guard let list = curl_slist_append(nil, connectTo) else { throw .network("out of memory pinning an address") }
            pinnedAddress = list
        }
        try check(fetchd_easy_setopt_slist(handle, CURLOPT_CONNECT_TO, pinnedAddress), CURLOPT_CONNECT_TO)
    }

    /// Where the hop that just ended redirects to, when the request follows redirects and curl
    /// left it to fetchd (CURLOPT_FOLLOWLOCATION off).
    func redirectTarget(after code: CURLcode) -> String? {
        guard request.followRedirects, code == CURLE_OK || receiver.stopReason == .bodyNotNeeded,
              let status = receiver.head?.status, (300..<400).contains(status) else { return nil }
        var url: UnsafeMutablePointer<CChar>?
        guard fetchd_easy_getinfo_cstr(handle, CURLINFO_REDIRECT_URL, &url) == CURLE_OK, let url else { return nil }
        return String(cString: url)
    }

    /// Points the handle at a redirect's target, with curl's rules for following: a limit, http
    /// and https only, no credentials for another origin.
    func follow(to url: String) throws(TransferFailure) {
        redirectsFollowed += 1
        guard redirectsFollowed <= request.maxRedirects else { throw .tooManyRedirects }
        guard let target = URLOrigin(url), ["http", "https"].contains(target.scheme) else {
            throw .unsupportedScheme(String(url.prefix { $0 != ":" }))
        }
        try setHeaders(withCredentials: target == URLOrigin(request.url))
        receiver.nextHop()
        try set(CURLOPT_URL, url)
    }
}
