#!/usr/bin/env bash
# fetchd under abuse, against the release binary on loopback:
#   1. 500 slow-loris connections held for 20 s (fetchd cuts each at its head deadline; the
#      attacker reopens it) while GET /healthz is probed every 100 ms: every probe answered in
#      under 100 ms, memory bounded.
#   2. One client pipelining 10,000 requests without reading, then 64 at once: every request
#      answered in order, fetchd's RSS under 100 MB.
# Prints its measurements; exits non-zero if a target is missed.
#
#   Benchmarks/http-abuse.sh
#   FETCHD_BIN=path/to/fetchd LORIS_CONNECTIONS=500 LORIS_SECONDS=20 Benchmarks/http-abuse.sh

source "$(dirname "$0")/http/lib.sh"

LORIS_CONNECTIONS=${LORIS_CONNECTIONS:-500}
LORIS_SECONDS=${LORIS_SECONDS:-20}

need curl curl python3 python3
# The attacker's sockets and fetchd's (started from this shell) need descriptors to spare.
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt 4096 ]; then
    ulimit -n 4096 || echo "warning: cannot raise the descriptor limit to 4096" >&2
fi

start_fetchd
HOST=127.0.0.1
PORT=${FETCHD_URL##*:}
ABUSE="python3 $(dirname "$0")/http/abuse.py"

status=0
$ABUSE slowloris "$HOST" "$PORT" "$FETCHD_PID" --connections "$LORIS_CONNECTIONS" --seconds "$LORIS_SECONDS" || status=1
$ABUSE flood "$HOST" "$PORT" "$FETCHD_PID" --clients 1 --requests 10000 || status=1
$ABUSE flood "$HOST" "$PORT" "$FETCHD_PID" --clients 64 --requests 10000 || status=1
kill -0 "$FETCHD_PID" || { echo "fetchd died" >&2; status=1; }
exit $status
