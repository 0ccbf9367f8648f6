#!/usr/bin/env bash
# Requests per second, with wrk at 64 connections on this machine, of fetchd's GET /healthz and
# POST /downloads (each job committed before its 201) next to nginx serving a small static file.
#
#   Benchmarks/http.sh                 # RUNS=5 rounds of DURATION=10 s each; prints medians
#   FETCHD_BIN=path/to/fetchd Benchmarks/http.sh
#
# Targets: GET /healthz >= 0.7 x nginx; POST /downloads >= 10,000 req/s.

source "$(dirname "$0")/http/lib.sh"

RUNS=${RUNS:-5}
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}

need wrk wrk nginx nginx-light curl curl

start_fetchd FETCHD_LOG_FORMAT=text

chmod 755 "$WORK"
mkdir -p "$WORK/static" "$WORK/nginx-tmp"
printf '{"status":"ok"}' >"$WORK/static/healthz"
chmod -R a+rX "$WORK/static"
NGINX_PORT=$(free_port)
sed -e "s|@WORK@|$WORK|g" -e "s|@PORT@|$NGINX_PORT|g" "$(dirname "$0")/http/nginx.conf" >"$WORK/nginx.conf"
nginx -c "$WORK/nginx.conf" -p "$WORK" &
PIDS+=("$!")
NGINX_URL="http://127.0.0.1:$NGINX_PORT"
wait_for "$NGINX_URL/healthz"

# wrk's requests per second; socket errors (a timeout is an answer slower than 2 s) and
# statuses other than 2xx go to standard error and $WORK/errors (measure runs in a subshell).
measure() {
    local name=$1 out
    shift
    out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" "$@")
    if grep -qE 'Non-2xx|Socket errors' <<<"$out"; then
        echo "  $name: $(grep -E 'Non-2xx|Socket errors' <<<"$out" | tr -s ' ' | paste -sd ';')" | tee -a "$WORK/errors" >&2
    fi
    awk '/^Requests\/sec:/ { printf "%.0f\n", $2 }' <<<"$out"
}

echo "wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s, $RUNS rounds, $(nproc) cores"
# Warm-up: the first seconds of a fresh process are not what it does under steady load.
DURATION=2 measure warmup-nginx "$NGINX_URL/healthz" >/dev/null
DURATION=2 measure warmup-healthz "$FETCHD_URL/healthz" >/dev/null
# nginx and /healthz alternate, so that noise from the rest of the machine hits both alike;
# POST /downloads comes last, as the work its jobs leave behind would load the other rounds.
for run in $(seq "$RUNS"); do
    nginx_rps=$(measure nginx "$NGINX_URL/healthz")
    healthz_rps=$(measure healthz "$FETCHD_URL/healthz")
    echo "$nginx_rps" >>"$WORK/nginx.txt"
    echo "$healthz_rps" >>"$WORK/healthz.txt"
    awk -v run="$run" -v n="$nginx_rps" -v h="$healthz_rps" \
        'BEGIN { printf "round %d: nginx %8d   GET /healthz %8d req/s   (%.2f x)\n", run, n, h, h / n }'
done
DURATION=2 measure warmup-post -s "$(dirname "$0")/http/post-downloads.lua" "$FETCHD_URL/downloads" -- warmup >/dev/null
for run in $(seq "$RUNS"); do
    post_rps=$(measure post -s "$(dirname "$0")/http/post-downloads.lua" "$FETCHD_URL/downloads" -- "run$run")
    echo "$post_rps" >>"$WORK/post.txt"
    printf 'round %d: POST /downloads %8d req/s\n' "$run" "$post_rps"
done

echo
echo "median of $RUNS rounds (req/s):"
awk -v nginx="$(median <"$WORK/nginx.txt")" -v healthz="$(median <"$WORK/healthz.txt")" \
    -v post="$(median <"$WORK/post.txt")" 'BEGIN {
    printf "  nginx static file    %8.0f\n", nginx
    printf "  GET /healthz         %8.0f   %.2f x nginx (target >= 0.70)\n", healthz, healthz / nginx
    printf "  POST /downloads      %8.0f   %.2f x nginx; target 10,000\n", post, post / nginx
}'
[ ! -s "$WORK/errors" ] || echo "$(wc -l <"$WORK/errors") runs had errors (above)"
