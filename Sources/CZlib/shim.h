// deflateInit2 is a macro (it passes zlib's version and struct size), which Swift cannot call.
#include <zlib.h>

/// Starts a deflate stream that writes the gzip format (RFC 1952): window bits 15, plus 16 for the gzip wrapper.
static inline int fetchd_deflate_init_gzip(z_stream *stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}

/// The reverse, for the tests that read gzipped responses back.
static inline int fetchd_inflate_init_gzip(z_stream *stream) {
    return inflateInit2(stream, 15 + 16);
}
