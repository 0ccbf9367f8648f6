# Shared by Benchmarks/http.sh and Benchmarks/http-abuse.sh: tools, a release fetchd started on
# a free port with a temporary data directory, and clean-up. Source it; do not run it.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WORK=$(mktemp -d /tmp/fetchd-http-bench.XXXXXX)
PIDS=()

cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

# Installs the Debian packages that provide the given commands when one is missing.
need() {
    local missing=()
    while [ $# -gt 0 ]; do
        command -v "$1" >/dev/null 2>&1 || missing+=("$2")
        shift 2
    done
    [ ${#missing[@]} -eq 0 ] && return
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    echo "installing: ${missing[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# A TCP port nobody listens on right now.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Polls until GET $1 answers 200, for at most 30 s.
wait_for() {
    local attempt
    for attempt in $(seq 300); do
        curl -fs -o /dev/null "$1" && return 0
        sleep 0.1
    done
    echo "no answer from $1" >&2
    return 1
}

# The release fetchd: $FETCHD_BIN if given, else built (scratch path $SCRATCH, default .build).
fetchd_binary() {
    if [ -n "${FETCHD_BIN:-}" ]; then
        echo "$FETCHD_BIN"
        return
    fi
    local scratch="${SCRATCH:-$ROOT/.build}"
    (cd "$ROOT" && swift build -c release --product fetchd --scratch-path "$scratch" >&2)
    echo "$scratch/release/fetchd"
}

# Starts fetchd on a free port; sets FETCHD_PID and FETCHD_URL. Extra environment may be given
# as NAME=value arguments.
start_fetchd() {
    local bin port
    bin=$(fetchd_binary)
    port=$(free_port)
    mkdir -p "$WORK/fetchd-data" "$WORK/downloads"
    env FETCHD_LISTEN="127.0.0.1:$port" FETCHD_DATA_DIR="$WORK/fetchd-data" \
        FETCHD_DOWNLOAD_ROOT="$WORK/downloads" FETCHD_ALLOW_PRIVATE_NETWORKS=true "$@" \
        "$bin" >"$WORK/fetchd.log" 2>&1 &
    FETCHD_PID=$!
    PIDS+=("$FETCHD_PID")
    FETCHD_URL="http://127.0.0.1:$port"
    wait_for "$FETCHD_URL/healthz"
}

# Resident set size of a process in KiB.
rss_kib() {
    awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

# The median of numbers given one per line.
median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
