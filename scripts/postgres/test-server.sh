#!/bin/sh
# A throwaway PostgreSQL server for the tests: `start` makes a fresh cluster in a temporary
# directory and prints its URL, `url` prints the URL of the running one, `halt` and `resume` stop
# it (cutting clients off) and start it again on its data, `stop` kills it and removes the directory.
# It listens on a Unix socket only (no TCP), trusts local connections and does not fsync
# (nothing in it outlives the tests). initdb refuses to run as root, so the server runs as the
# `postgres` user (Debian's postgresql package makes it).
#
# One server per checkout: the directory is named after this repository's path, so worktrees
# test side by side. FETCHD_TEST_PG_DIR overrides it.
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${FETCHD_TEST_PG_DIR:-/tmp/fetchd-test-pg-$(printf %s "$root" | cksum | cut -d' ' -f1)}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bin" ] || { echo "test-server.sh: no PostgreSQL server installed (Debian package postgresql)" >&2; exit 1; }

as_postgres() {
	if [ "$(id -un)" = postgres ]; then "$@"
	elif [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"
	else sudo -u postgres "$@"
	fi
}

url() { echo "postgresql://postgres@/postgres?host=$dir"; }

serve() {
	as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -s \
		-o "-c listen_addresses='' -c unix_socket_directories='$dir' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
		start || { cat "$dir/server.log" >&2; exit 1; }
}

running() { [ -f "$dir/data/postmaster.pid" ] && as_postgres "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; }

# The server's files belong to postgres; so does the directory, so postgres can remove it from /tmp.
remove() { [ ! -e "$dir" ] || as_postgres rm -rf "$dir" 2>/dev/null || rm -rf "$dir"; }

case "${1:-}" in
start)
	if ! running; then
		remove
		mkdir -p "$dir"
		chown postgres: "$dir" 2>/dev/null || sudo chown postgres: "$dir"
		as_postgres "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
			{ cat "$dir/initdb.log" >&2; exit 1; }
		serve
	fi
	url
	;;
url)
	running || { echo "test-server.sh: not running (start it first)" >&2; exit 1; }
	url
	;;
halt)
	# Stops the server, keeping its data, for tests of a database that goes away: clients are
	# cut off at once, and what they committed stays (an immediate stop would lose the last
	# commits, as the server does not fsync).
	if running; then as_postgres "$bin/pg_ctl" -D "$dir/data" -m fast -s stop; fi
	;;
resume)
	# Starts a halted server again on its data.
	running || serve
	url
	;;
stop)
	if running; then as_postgres "$bin/pg_ctl" -D "$dir/data" -m immediate -s stop; fi
	remove
	;;
*)
	echo "usage: $0 start|url|halt|resume|stop" >&2
	exit 2
	;;
esac
