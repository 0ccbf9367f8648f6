// libpq, PostgreSQL's client library; its header lives in the directory pkg-config names.
#include <libpq-fe.h>
