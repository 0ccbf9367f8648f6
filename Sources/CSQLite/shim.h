#include <sqlite3.h>

/// Turns off SQLite's memory statistics, which take a global mutex on every allocation (C variadic
/// sqlite3_config cannot be called from Swift). Only works before SQLite initializes: SQLITE_MISUSE after.
static inline int fetchd_sqlite3_disable_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/// Turns this connection's triggers on or off (C variadic sqlite3_db_config cannot be called from
/// Swift). A change expires the connection's prepared statements, which SQLite prepares again on
/// their next step, then with or without the triggers' code.
static inline int fetchd_sqlite3_enable_triggers(sqlite3 *db, int on) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, on, (int *)0);
}
