#include <sqlite3.h>

/// Turns off SQLite's memory statistics, which take a global mutex on every allocation (C variadic
/// sqlite3_config cannot be called from Swift). Only works before SQLite initializes: SQLITE_MISUSE after.
static inline int fetchd_sqlite3_disable_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
