// Swift cannot call C variadic functions, so every curl_*_setopt / getinfo call goes through
// one of these non-variadic wrappers, one per argument type.
#include <curl/curl.h>
#include <sys/socket.h>

static inline CURLcode fetchd_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode fetchd_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode fetchd_easy_setopt_ptr(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode fetchd_easy_setopt_cstr(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode fetchd_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode fetchd_easy_setopt_write(CURL *h, CURLoption o, curl_write_callback v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode fetchd_easy_setopt_xferinfo(CURL *h, CURLoption o, curl_xferinfo_callback v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode fetchd_easy_setopt_opensocket(CURL *h, CURLoption o, curl_opensocket_callback v) { return curl_easy_setopt(h, o, v); }

static inline CURLcode fetchd_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode fetchd_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode fetchd_easy_getinfo_ptr(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode fetchd_easy_getinfo_cstr(CURL *h, CURLINFO i, char **v) { return curl_easy_getinfo(h, i, v); }

static inline CURLMcode fetchd_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode fetchd_multi_setopt_ptr(CURLM *m, CURLMoption o, void *v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode fetchd_multi_setopt_socketfn(CURLM *m, CURLMoption o, curl_socket_callback v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode fetchd_multi_setopt_timerfn(CURLM *m, CURLMoption o, curl_multi_timer_callback v) { return curl_multi_setopt(m, o, v); }

// Added for the Transfer module.
static inline CURLcode fetchd_easy_setopt_closesocket(CURL *h, CURLoption o, curl_closesocket_callback v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode fetchd_easy_setopt_prereq(CURL *h, CURLoption o, curl_prereq_callback v) { return curl_easy_setopt(h, o, v); }

// `struct curl_sockaddr` ends in a `struct sockaddr` that is really as long as `addrlen`
// (a sockaddr_in6 overruns the declared field), so hand Swift a pointer to it instead of a copy.
static inline const struct sockaddr *fetchd_sockaddr_address(const struct curl_sockaddr *a) { return &a->addr; }

// Added for TLS and proxy settings. CURL_BLOB_NOCOPY: the caller keeps `data` alive for as long
// as the handle may connect (the engine owns it for its lifetime).
static inline CURLcode fetchd_easy_setopt_blob(CURL *h, CURLoption o, void *data, size_t length) {
    struct curl_blob blob = { data, length, CURL_BLOB_NOCOPY };
    return curl_easy_setopt(h, o, &blob);
}

// Added for request bodies read from a file (uploads).
static inline CURLcode fetchd_easy_setopt_read(CURL *h, CURLoption o, curl_read_callback v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode fetchd_easy_setopt_seek(CURL *h, CURLoption o, curl_seek_callback v) { return curl_easy_setopt(h, o, v); }
