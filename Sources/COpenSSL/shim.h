// OpenSSL's low-level digest contexts: plain structs whose bytes can be saved and restored, so
// that an object's digest goes on after a restart from where its last uploaded part left it.
// (EVP contexts are opaque.) These functions are deprecated in OpenSSL 3 but kept for exactly
// this kind of use; the deprecation attributes are turned off for them.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/md5.h>
#include <openssl/sha.h>
