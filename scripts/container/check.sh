#!/usr/bin/env bash
# make container-check: the Dockerfile's runtime image without Docker.
#
# Builds fetchd the way the Dockerfile's build stage does, assembles the final stage's file
# system with debootstrap (its FROM, RUN, COPY, ENV, USER, VOLUME, HEALTHCHECK and ENTRYPOINT
# are read from the Dockerfile by dockerfile.py, not restated here), and runs the binary in it
# with chroot, as the image's user, through a smoke test on loopback. What only shows in the
# image then shows here rather than in production: a shared library the runtime packages do not
# bring, a write outside the volumes, a layout that breaks when the two volumes are separate
# mounts, a HEALTHCHECK that cannot pass, an unclean exit on SIGTERM.
#
# Needs root (debootstrap, mount, chroot). The debootstrapped file system is cached under
# .build-container/rootfs and rebuilt when the final stage's FROM or RUN lines, or the apt
# sources, change (REBUILD_ROOTFS=1 forces it). Every process and mount it starts is gone
# when it exits, however it exits.

set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SCRATCH=$REPO/.build-container        # swift build scratch path and everything else of the check
ROOTFS=$SCRATCH/rootfs                # the image's file system (cached)
RUN_DIR=$SCRATCH/run                  # logs, origin files, stamp; fresh each run
VOLUME_DIR=$SCRATCH/volumes           # what Docker would keep in the named volumes
DOCKERFILE=${CONTAINER_CHECK_DOCKERFILE:-$REPO/Dockerfile}   # another one to try a change out
PARSE=$REPO/scripts/container/dockerfile.py
SWIFT=${SWIFT:-swift}
# Bumped when the way the rootfs is assembled changes, so a cached one is not reused.
ASSEMBLY_VERSION=2

PASSED=0
FAILED=0
FETCHD_PID=""
ORIGIN_PID=""
TLS_ORIGIN_PID=""
# Where the test CA is mounted in the image, read-only, as `docker run -v ca.pem:/mnt/ca.pem:ro`
# would (/mnt exists, empty, in the Debian image, so nothing in the image has to change).
CA_IN_IMAGE=/mnt/ca.pem

# ---- reporting -----------------------------------------------------------------------------

step() { printf '\n==> %s\n' "$*"; }
pass() { printf 'PASS  %s\n' "$1"; PASSED=$((PASSED + 1)); }
# fail NAME [DETAIL LINES...]
fail() {
    printf 'FAIL  %s\n' "$1"
    shift
    local line
    for line in "$@"; do printf '      %s\n' "$line"; done
    FAILED=$((FAILED + 1))
}
die() { printf 'container-check: %s\n' "$*" >&2; exit 1; }
# Indented output of a command, for context under a PASS/FAIL line.
indent() { sed 's/^/      /'; }

# ---- processes and mounts --------------------------------------------------------------------

# stop_process PID: SIGTERM, then SIGKILL after 5 s. Only for children of this script.
stop_process() {
    local pid=$1 i
    [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# Unmounts everything below the scratch directory, deepest first. Looking at the mount table
# rather than remembering what was mounted also removes what an interrupted debootstrap or an
# earlier killed run left behind.
mounts_below_scratch() {
    findmnt -rn -o TARGET | awk -v below="$SCRATCH/" 'index($0, below) == 1' | sort -r
}

unmount_all() {
    local target
    mounts_below_scratch | while read -r target; do
        umount "$target" 2>/dev/null || umount -l "$target" || echo "container-check: cannot unmount $target" >&2
    done
}

cleanup() {
    local status=$?
    set +e
    stop_process "$FETCHD_PID"
    stop_process "$ORIGIN_PID"
    stop_process "$TLS_ORIGIN_PID"
    unmount_all
    exit "$status"
}

# mount_runtime ROOT: what Docker gives every container: /proc, a read-only /sys, and a small
# /dev of its own (not the host's) with the usual device nodes.
mount_runtime() {
    local root=$1
    mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
    mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys"
    mount -t tmpfs -o nosuid,mode=0755,size=65536k tmpfs "$root/dev"
    mknod -m 666 "$root/dev/null" c 1 3
    mknod -m 666 "$root/dev/zero" c 1 5
    mknod -m 666 "$root/dev/full" c 1 7
    mknod -m 666 "$root/dev/random" c 1 8
    mknod -m 666 "$root/dev/urandom" c 1 9
    mknod -m 666 "$root/dev/tty" c 5 0
    ln -s /proc/self/fd "$root/dev/fd"
    ln -s /proc/self/fd/0 "$root/dev/stdin"
    ln -s /proc/self/fd/1 "$root/dev/stdout"
    ln -s /proc/self/fd/2 "$root/dev/stderr"
    mkdir -m 1777 "$root/dev/shm"
}

# ---- host preparation ------------------------------------------------------------------------

ensure_host_tools() {
    [[ $(id -u) == 0 ]] || die "needs root for debootstrap, mount and chroot (sudo make container-check)"
    local missing=() tool
    for tool in debootstrap curl jq findmnt openssl; do
        command -v "$tool" >/dev/null || missing+=("$tool")
    done
    command -v python3 >/dev/null || die "needs python3 (reads the Dockerfile, serves the test origin)"
    command -v "$SWIFT" >/dev/null || die "cannot find $SWIFT (set SWIFT=/path/to/swift)"
    if ((${#missing[@]})); then
        missing=("${missing[@]/findmnt/util-linux}")
        echo "installing: ${missing[*]}"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

# apt_uri SUITE: the URI of the first enabled "deb" entry of the host's apt sources for SUITE,
# in either format (deb822 *.sources or one-line *.list).
apt_uri() {
    local suite=$1 file
    for file in /etc/apt/sources.list /etc/apt/sources.list.d/*; do
        [[ -f $file ]] || continue
        case $file in
        *.sources)
            awk -v want="$suite" '
                function flush() {
                    if (!done && enabled != "no" && (" " types " ") ~ / deb / && (" " suites " ") ~ (" " want " ") && uris != "") {
                        split(uris, u, " "); print u[1]; done = 1
                    }
                    types = uris = suites = enabled = ""
                }
                /^[ \t]*$/ { flush(); next }
                /^#/ { next }
                { key = tolower($1); $1 = ""; sub(/^ +/, "") }
                key == "types:" { types = $0 } key == "uris:" { uris = $0 }
                key == "suites:" { suites = $0 } key == "enabled:" { enabled = tolower($0) }
                END { flush() }' "$file"
            ;;
        *.list)
            awk -v want="$suite" '
                $1 == "deb" { sub(/\[[^]]*\] */, ""); if ($3 == want) { print $2; exit } }' "$file"
            ;;
        esac
    done | head -n 1
}

# ---- the Dockerfile --------------------------------------------------------------------------

# Fills the globals below from the Dockerfile's final stage.
read_dockerfile() {
    local base
    base=$(python3 "$PARSE" "$DOCKERFILE" from)
    # debian:bookworm-slim is debootstrap's minbase of bookworm, less documentation.
    [[ $base =~ ^debian:([a-z]+)(-slim)?$ ]] || die "the final stage is FROM $base; only debian:SUITE[-slim] is reproduced"
    SUITE=${BASH_REMATCH[1]}
    mapfile -d '' RUN_COMMANDS < <(python3 "$PARSE" "$DOCKERFILE" run)
    mapfile -t COPIES < <(python3 "$PARSE" "$DOCKERFILE" copy)
    mapfile -d '' IMAGE_ENV < <(python3 "$PARSE" "$DOCKERFILE" env)
    mapfile -t VOLUMES < <(python3 "$PARSE" "$DOCKERFILE" volumes)
    mapfile -t EXPOSED < <(python3 "$PARSE" "$DOCKERFILE" expose)
    mapfile -d '' HEALTHCHECK < <(python3 "$PARSE" "$DOCKERFILE" healthcheck)
    mapfile -d '' ENTRYPOINT < <(python3 "$PARSE" "$DOCKERFILE" entrypoint)
    HEALTHCHECK_TIMEOUT=$(python3 "$PARSE" "$DOCKERFILE" healthcheck-timeout)
    USER_SPEC=$(python3 "$PARSE" "$DOCKERFILE" user)
    STOP_SIGNAL=$(python3 "$PARSE" "$DOCKERFILE" stopsignal)
    BUILD_RUNS=$(python3 "$PARSE" "$DOCKERFILE" build-run | tr -s ' ')
    # Processes mapfile'd from a failed parse leave empty arrays; say so instead of running blind.
    ((${#RUN_COMMANDS[@]} && ${#COPIES[@]} && ${#HEALTHCHECK[@]} && ${#ENTRYPOINT[@]})) ||
        die "cannot read the Dockerfile's final stage (see the message above)"
    [[ $USER_SPEC =~ ^[0-9]+:[0-9]+$ ]] || die "USER $USER_SPEC: only a numeric uid:gid is reproduced"
}

# image_env NAME: the value the Dockerfile's ENV gives NAME.
image_env() {
    local pair
    for pair in "${IMAGE_ENV[@]}"; do
        [[ $pair == "$1="* ]] && { printf '%s\n' "${pair#*=}"; return; }
    done
}

# ---- build stage -----------------------------------------------------------------------------

build_binary() {
    step "build: swift build -c release --static-swift-stdlib --product fetchd (scratch path .build-container)"
    cd "$REPO"
    # As the Dockerfile: honour the pins when there are any.
    if [[ -f Package.resolved ]]; then
        "$SWIFT" package --scratch-path "$SCRATCH" resolve --force-resolved-versions
    else
        "$SWIFT" package --scratch-path "$SCRATCH" resolve
    fi
    "$SWIFT" build -c release --static-swift-stdlib --scratch-path "$SCRATCH" --product fetchd
    BINARY=$("$SWIFT" build -c release --static-swift-stdlib --scratch-path "$SCRATCH" --show-bin-path)/fetchd
    # The Swift image's toolchain lives in /usr, so its /usr/libexec/swift/linux is this one.
    local toolchain
    toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v "$SWIFT")")")")
    BACKTRACER=$toolchain/libexec/swift/linux/swift-backtrace-static
    [[ -x $BINARY ]] || die "no binary at $BINARY"
    [[ -x $BACKTRACER ]] || die "no swift-backtrace-static in the toolchain ($BACKTRACER)"
}

# ---- final stage: the file system ------------------------------------------------------------

# The deb822 sources the image gets: the host's mirror for the suite, its -updates and -security.
write_sources() {
    local root=$1 suite uri
    rm -f "$root/etc/apt/sources.list"
    : >"$root/etc/apt/sources.list.d/debian.sources"
    for suite in "$SUITE" "$SUITE-updates" "$SUITE-security"; do
        uri=$(apt_uri "$suite")
        [[ $suite == "$SUITE" ]] && uri=${CONTAINER_CHECK_MIRROR:-$uri}
        [[ -n $uri ]] || continue
        printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n' \
            "$uri" "$suite" >>"$root/etc/apt/sources.list.d/debian.sources"
    done
}

# The Debian images keep no .deb files or package caches: apt deletes them after each run
# (their /etc/apt/apt.conf.d/docker-clean, restated here), and debootstrap's downloads are not
# in them at all.
clean_apt_like_the_image() {
    local root=$1 clean='rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true'
    printf 'DPkg::Post-Invoke { "%s"; };\nAPT::Update::Post-Invoke { "%s"; };\nDir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n' \
        "$clean" "$clean" >"$root/etc/apt/apt.conf.d/docker-clean"
    rm -f "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin
}

# Runs the final stage's FROM and RUN lines into $ROOTFS, unless the cached one was made from
# the same lines and sources.
assemble_rootfs() {
    local mirror key tmp=$SCRATCH/rootfs.tmp command
    mirror=${CONTAINER_CHECK_MIRROR:-$(apt_uri "$SUITE")}
    [[ -n $mirror ]] || die "the host's apt has no source for $SUITE; set CONTAINER_CHECK_MIRROR=http://…/debian"
    key=$( {
        echo "$ASSEMBLY_VERSION $SUITE $mirror $(apt_uri "$SUITE-updates") $(apt_uri "$SUITE-security")"
        printf '%s\n' "${RUN_COMMANDS[@]}"
    } | sha256sum | cut -d' ' -f1)
    if [[ -z ${REBUILD_ROOTFS:-} && -f $ROOTFS.key && $(cat "$ROOTFS.key") == "$key" && -d $ROOTFS ]]; then
        step "rootfs: cached $ROOTFS (same FROM, RUN and sources)"
        return
    fi
    step "rootfs: debootstrap --variant=minbase $SUITE from $mirror, then the final stage's RUN"
    # rm -rf through a mount would reach outside the scratch directory.
    [[ -z $(mounts_below_scratch) ]] || die "still mounted below $SCRATCH: $(mounts_below_scratch | paste -sd' ')"
    rm -rf "$tmp" "$ROOTFS" "$ROOTFS.key"
    debootstrap --variant=minbase "$SUITE" "$tmp" "$mirror" >"$SCRATCH/debootstrap.log" 2>&1 ||
        { tail -n 20 "$SCRATCH/debootstrap.log" >&2; die "debootstrap failed (log: $SCRATCH/debootstrap.log)"; }
    write_sources "$tmp"
    clean_apt_like_the_image "$tmp"
    # apt-get update inside needs a resolver; Docker would bind-mount its own at run time.
    cp -L /etc/resolv.conf "$tmp/etc/resolv.conf"
    mount_runtime "$tmp"
    for command in "${RUN_COMMANDS[@]}"; do
        echo "RUN $command" | tr -s ' '
        # RUN is /bin/sh -c with the image's environment (Debian's PATH) and no terminal.
        chroot "$tmp" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            /bin/sh -c "$command" </dev/null >>"$SCRATCH/run-steps.log" 2>&1 ||
            { tail -n 20 "$SCRATCH/run-steps.log" >&2; die "RUN failed in the rootfs (log: $SCRATCH/run-steps.log)"; }
    done
    unmount_all
    rm -f "$tmp/etc/resolv.conf"
    mv "$tmp" "$ROOTFS"
    echo "$key" >"$ROOTFS.key"
}

# The final stage's COPY --from=build lines, with the build stage's /staging files mapped to
# what build_binary made.
install_copies() {
    local line source destination local_file
    for line in "${COPIES[@]}"; do
        source=${line%%$'\t'*}
        destination=${line#*$'\t'}
        case $source in
        /staging/fetchd) local_file=$BINARY ;;
        /staging/swift-backtrace-static) local_file=$BACKTRACER ;;
        *) die "COPY $source: check.sh does not know what the build stage puts there" ;;
        esac
        # COPY keeps the mode and makes the file root's.
        install -D -o root -g root -m 0755 "$local_file" "$ROOTFS$destination"
    done
}

# Fresh volumes for every run, as new named volumes: empty, with the owner and mode of the
# image's directory. Separate bind mounts, so (as with Docker volumes) the data directory and
# the download root are different mounts and a hard link between them fails with EXDEV.
mount_volumes() {
    local volume dir
    rm -rf "$VOLUME_DIR"
    for volume in "${VOLUMES[@]}"; do
        [[ -d $ROOTFS$volume ]] || die "VOLUME $volume does not exist in the image"
        dir=$VOLUME_DIR/$(echo "${volume#/}" | tr / _)
        mkdir -p "$dir"
        chown "$(stat -c %u:%g "$ROOTFS$volume")" "$dir"
        chmod "$(stat -c %a "$ROOTFS$volume")" "$dir"
        mount --bind "$dir" "$ROOTFS$volume"
    done
    echo "volumes: ${VOLUMES[*]}, fresh, each its own mount as in Docker (a hard link between them is EXDEV)"
}

# ---- running in the image --------------------------------------------------------------------

# container_env [NAME=VALUE...]: the environment docker run gives the entrypoint: Debian's PATH,
# HOME from the image's passwd for the USER, the image's ENV, then -e overrides.
container_env() {
    local uid=${USER_SPEC%%:*} home
    home=$(awk -F: -v uid="$uid" '$3 == uid { print $6 }' "$ROOTFS/etc/passwd")
    printf '%s\0' PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOSTNAME=fetchd-container-check "HOME=${home:-/}" "${IMAGE_ENV[@]}" "$@"
}

# image_user ENV_FILE: sets IMAGE_USER to the command prefix that runs a program in the rootfs
# as the image's USER with exactly the environment in ENV_FILE (NUL-separated). An array rather
# than a function so that timeout and unshare can run it. chroot and env exec what they run.
image_user() {
    local environment
    mapfile -d '' environment <"$1"
    IMAGE_USER=(chroot --userspec="$USER_SPEC" "$ROOTFS" /usr/bin/env -i "${environment[@]}")
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_http URL SECONDS: until URL answers at all (any status), or false.
wait_http() {
    local url=$1 deadline=$((SECONDS + $2))
    while ((SECONDS < deadline)); do
        curl -s -o /dev/null --max-time 2 "$url" && return 0
        [[ -n $FETCHD_PID ]] && ! kill -0 "$FETCHD_PID" 2>/dev/null && return 1
        sleep 0.2
    done
    return 1
}

start_origin() {
    ORIGIN_PORT=$(free_port)
    mkdir -p "$RUN_DIR/origin"
    head -c 4194304 /dev/urandom >"$RUN_DIR/origin/sample.bin"
    ORIGIN_SHA=$(sha256sum "$RUN_DIR/origin/sample.bin" | cut -d' ' -f1)
    python3 -m http.server "$ORIGIN_PORT" --bind 127.0.0.1 --directory "$RUN_DIR/origin" \
        >"$RUN_DIR/origin.log" 2>&1 &
    ORIGIN_PID=$!
    wait_http "http://127.0.0.1:$ORIGIN_PORT/" 15 || die "the test origin did not start"
    start_tls_origin
}

# An HTTPS origin for the same files, with a certificate from a CA made here: fetchd in the image
# trusts it only through FETCHD_CA_BUNDLE (the CA mounted read-only at $CA_IN_IMAGE).
start_tls_origin() {
    local tls=$RUN_DIR/tls ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
    mkdir -p "$tls"
    openssl req -x509 "${ec[@]}" -days 2 -subj '/CN=container-check CA' -addext basicConstraints=critical,CA:TRUE \
        -addext keyUsage=critical,keyCertSign -keyout "$tls/ca.key" -out "$tls/ca.pem" 2>/dev/null
    openssl req "${ec[@]}" -subj /CN=127.0.0.1 -keyout "$tls/server.key" -out "$tls/server.csr" 2>/dev/null
    echo subjectAltName=IP:127.0.0.1 >"$tls/server.ext"
    openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial -days 2 \
        -extfile "$tls/server.ext" -out "$tls/server.pem" 2>/dev/null
    chmod 0644 "$tls/ca.pem"
    mkdir -p "$tls/mount"
    cp "$tls/ca.pem" "$tls/mount/ca.pem"
    mount --bind "$tls/mount" "$ROOTFS$(dirname "$CA_IN_IMAGE")"
    mount -o remount,bind,ro "$ROOTFS$(dirname "$CA_IN_IMAGE")"
    TLS_ORIGIN_PORT=$(free_port)
    (cd "$RUN_DIR/origin" && exec python3 -c 'import http.server, ssl, sys
server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), http.server.SimpleHTTPRequestHandler)
tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); tls.load_cert_chain(sys.argv[2], sys.argv[3])
server.socket = tls.wrap_socket(server.socket, server_side=True); server.serve_forever()' \
        "$TLS_ORIGIN_PORT" "$tls/server.pem" "$tls/server.key") >"$RUN_DIR/tls-origin.log" 2>&1 &
    TLS_ORIGIN_PID=$!
    local deadline=$((SECONDS + 15))
    until curl -s -o /dev/null --cacert "$tls/ca.pem" "https://127.0.0.1:$TLS_ORIGIN_PORT/"; do
        ((SECONDS < deadline)) || die "the HTTPS test origin did not start"
        sleep 0.2
    done
}

# ---- checks ----------------------------------------------------------------------------------

check_dockerfile_consistency() {
    step "Dockerfile"
    local wanted="swift build -c release --static-swift-stdlib --product fetchd"
    if grep -qF -- "$wanted" <<<"$BUILD_RUNS"; then
        pass "the build stage runs '$wanted', as built here"
    else
        fail "the build stage no longer runs '$wanted'; update build_binary" "$BUILD_RUNS"
    fi
    local listen data root
    listen=$(image_env FETCHD_LISTEN) data=$(image_env FETCHD_DATA_DIR) root=$(image_env FETCHD_DOWNLOAD_ROOT)
    if [[ " ${EXPOSED[*]} " == *" ${listen##*:} "* ]]; then
        pass "ENV FETCHD_LISTEN=$listen listens on the EXPOSEd port (${EXPOSED[*]})"
    else
        fail "ENV FETCHD_LISTEN=$listen is not on an EXPOSEd port (${EXPOSED[*]})"
    fi
    if [[ " ${VOLUMES[*]} " == *" $data "* && " ${VOLUMES[*]} " == *" $root "* ]]; then
        pass "ENV FETCHD_DATA_DIR=$data and FETCHD_DOWNLOAD_ROOT=$root are the VOLUMEs"
    else
        fail "FETCHD_DATA_DIR=$data and FETCHD_DOWNLOAD_ROOT=$root are not both VOLUMEs (${VOLUMES[*]})"
    fi
}

check_libraries() {
    step "libraries"
    local line source destination output
    for line in "${COPIES[@]}"; do
        destination=${line#*$'\t'}
        source=${line%%$'\t'*}
        # ldd inside the rootfs: the image's loader and the image's libraries only.
        output=$(chroot "$ROOTFS" /usr/bin/ldd "$destination" 2>&1) || true
        if [[ $output == *"not a dynamic executable"* || $output == *"statically linked"* ]]; then
            pass "ldd $destination: statically linked"
        elif [[ -n $output && $output != *"not found"* ]]; then
            pass "ldd $destination: every library resolves in the image"
            awk '{ print $1 }' <<<"$output" | paste -sd' ' | fold -s -w 90 | indent
        else
            fail "ldd $destination: missing in the image (from COPY $source)" "$(grep 'not found' <<<"$output" || echo "$output")"
        fi
    done
}

check_refuses_without_tokens() {
    step "the image's own FETCHD_LISTEN without a token"
    local env_file=$RUN_DIR/env-default status=0 output
    container_env >"$env_file"
    # In a new, empty network namespace: were the refusal ever broken, the 0.0.0.0 listener
    # would not be reachable from anywhere.
    image_user "$env_file"
    output=$(unshare --net timeout 20 "${IMAGE_USER[@]}" "${ENTRYPOINT[@]}" 2>&1 </dev/null) || status=$?
    if [[ $status == 2 && $output == *"FETCHD_API_TOKENS"* ]]; then
        pass "FETCHD_LISTEN=$(image_env FETCHD_LISTEN) without FETCHD_API_TOKENS refuses to start (exit 2)"
        printf '%s\n' "$output" | tail -n 1 | indent
    else
        fail "FETCHD_LISTEN=$(image_env FETCHD_LISTEN) without tokens: exit $status, expected 2 and a message naming FETCHD_API_TOKENS" "$output"
    fi
}

start_fetchd() {
    step "fetchd in the image as $USER_SPEC"
    FETCHD_PORT=$(free_port)
    TOKEN=container-check-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
    container_env "FETCHD_LISTEN=127.0.0.1:$FETCHD_PORT" "FETCHD_API_TOKENS=$TOKEN" \
        FETCHD_ALLOW_PRIVATE_NETWORKS=true "FETCHD_CA_BUNDLE=$CA_IN_IMAGE" >"$RUN_DIR/env-run"
    # chroot and env exec: $! is fetchd itself.
    image_user "$RUN_DIR/env-run"
    "${IMAGE_USER[@]}" "${ENTRYPOINT[@]}" </dev/null >"$RUN_DIR/fetchd.log" 2>&1 &
    FETCHD_PID=$!
    BASE=http://127.0.0.1:$FETCHD_PORT
    if wait_http "$BASE/healthz" 60; then
        pass "started: listening on 127.0.0.1:$FETCHD_PORT (pid $FETCHD_PID)"
    elif kill -0 "$FETCHD_PID" 2>/dev/null; then
        fail "fetchd did not start listening within 60 s" "$(tail -n 20 "$RUN_DIR/fetchd.log")"
        return 1
    else
        local status=0
        wait "$FETCHD_PID" || status=$?
        FETCHD_PID=""
        fail "fetchd exited with status $status before listening" "$(tail -n 20 "$RUN_DIR/fetchd.log")"
        return 1
    fi
}

check_process() {
    local uids gids root
    uids=$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "/proc/$FETCHD_PID/status")
    gids=$(awk '/^Gid:/ { print $2, $3, $4, $5 }' "/proc/$FETCHD_PID/status")
    root=$(readlink "/proc/$FETCHD_PID/root")
    local uid=${USER_SPEC%%:*} gid=${USER_SPEC#*:}
    if [[ $uids == "$uid $uid $uid $uid" && $gids == "$gid $gid $gid $gid" && $root == "$ROOTFS" ]]; then
        pass "runs as uid $uid gid $gid (real, effective, saved, fs) with its root in the image"
    else
        fail "process identity" "Uid: $uids" "Gid: $gids" "root: $root"
    fi
}

check_probes() {
    local path code
    for path in /healthz /readyz; do
        code=$(curl -s -o "$RUN_DIR/probe.out" -w '%{http_code}' --max-time 5 "$BASE$path") || true
        if [[ $code == 200 ]]; then
            pass "GET $path without a token: 200"
        else
            fail "GET $path: $code, expected 200" "$(cat "$RUN_DIR/probe.out" 2>/dev/null)"
        fi
    done
}

# run_healthcheck [NAME=VALUE...]: the HEALTHCHECK CMD as Docker runs it: as the USER, with the
# container's environment, killed after its --timeout. Prints nothing; its status is the result.
run_healthcheck() {
    local env_file=$RUN_DIR/env-healthcheck
    cp "$RUN_DIR/env-run" "$env_file"
    if (($#)); then printf '%s\0' "$@" >>"$env_file"; fi
    image_user "$env_file"
    timeout "$HEALTHCHECK_TIMEOUT" "${IMAGE_USER[@]}" "${HEALTHCHECK[@]}" </dev/null >"$RUN_DIR/healthcheck.out" 2>&1
}

check_healthcheck_up() {
    if run_healthcheck; then
        pass "HEALTHCHECK CMD (bash /dev/tcp) with FETCHD_LISTEN=127.0.0.1:$FETCHD_PORT: exit 0"
    else
        fail "HEALTHCHECK CMD against a running fetchd: exit $?" "$(cat "$RUN_DIR/healthcheck.out")"
    fi
    # The image's FETCHD_LISTEN is 0.0.0.0:PORT; the check must turn that into 127.0.0.1.
    if run_healthcheck "FETCHD_LISTEN=0.0.0.0:$FETCHD_PORT"; then
        pass "HEALTHCHECK CMD with FETCHD_LISTEN=0.0.0.0:$FETCHD_PORT (the image's form): exit 0"
    else
        fail "HEALTHCHECK CMD with FETCHD_LISTEN=0.0.0.0:$FETCHD_PORT: exit $?" "$(cat "$RUN_DIR/healthcheck.out")"
    fi
}

check_download() {
    local code body=$RUN_DIR/response.json
    code=$(curl -s -o "$body" -w '%{http_code}' --max-time 10 -X POST "$BASE/downloads" \
        -H 'Content-Type: application/json' -d '{"url": "http://127.0.0.1:1/x", "destination": "x"}') || true
    if [[ $code == 401 ]]; then
        pass "POST /downloads without the token: 401"
    else
        fail "POST /downloads without the token: $code, expected 401"
    fi
    check_job "http://127.0.0.1:$ORIGIN_PORT/sample.bin" smoke/sample.bin
    # The image's CA certificates plus FETCHD_CA_BUNDLE: the test CA verifies.
    check_job "https://127.0.0.1:$TLS_ORIGIN_PORT/sample.bin" smoke/sample-https.bin
}

# check_job URL DESTINATION: the job completes and the file in the image is the origin's.
check_job() {
    local url=$1 destination=$2 code body=$RUN_DIR/response.json id state="" deadline file sha
    code=$(curl -s -o "$body" -w '%{http_code}' --max-time 10 -X POST "$BASE/downloads" \
        -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
        -d "{\"url\": \"$url\", \"destination\": \"$destination\"}") || true
    if [[ $code != 201 ]]; then
        fail "POST /downloads with the token: $code, expected 201" "$(cat "$body")"
        return
    fi
    id=$(jq -r .id "$body")
    pass "POST /downloads $url with the token: 201, job $id"
    deadline=$((SECONDS + 60))
    while ((SECONDS < deadline)); do
        curl -s -o "$body" --max-time 5 -H "Authorization: Bearer $TOKEN" "$BASE/downloads/$id" || true
        state=$(jq -r '.state // empty' "$body" 2>/dev/null || true)
        [[ $state == completed || $state == failed || $state == cancelled ]] && break
        sleep 0.2
    done
    if [[ $state != completed ]]; then
        fail "job $id: state '$state', expected completed within 60 s" "$(jq -c '{state, error}' "$body" 2>/dev/null)"
        return
    fi
    pass "job $id completed"
    file=$ROOTFS/downloads/$destination
    sha=$(sha256sum "$file" 2>/dev/null | cut -d' ' -f1)
    if [[ $sha == "$ORIGIN_SHA" && $(jq -r .sha256 "$body") == "$ORIGIN_SHA" ]]; then
        pass "/downloads/$destination in the image: sha256 $sha, as the origin's and the job's"
    else
        fail "/downloads/$destination: sha256 '${sha:-missing}', origin $ORIGIN_SHA, job $(jq -r .sha256 "$body")"
    fi
    if [[ $(stat -c %u:%g "$file" 2>/dev/null) == "$USER_SPEC" ]]; then
        pass "the file belongs to $USER_SPEC"
    else
        fail "the file belongs to $(stat -c %u:%g "$file" 2>/dev/null), expected $USER_SPEC"
    fi
}

check_stop() {
    local status=0 i
    kill "-${STOP_SIGNAL#SIG}" "$FETCHD_PID"
    # docker stop --stop-timeout 15, as the Dockerfile's comment asks for.
    for ((i = 0; i < 150; i++)); do
        kill -0 "$FETCHD_PID" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$FETCHD_PID" 2>/dev/null; then
        fail "$STOP_SIGNAL: still running after 15 s" "$(tail -n 5 "$RUN_DIR/fetchd.log")"
        return
    fi
    wait "$FETCHD_PID" || status=$?
    FETCHD_PID=""
    if [[ $status == 0 ]]; then
        pass "$STOP_SIGNAL: exit 0 after $(printf '%d.%d' $((i / 10)) $((i % 10))) s"
    else
        fail "$STOP_SIGNAL: exit $status, expected 0" "$(tail -n 5 "$RUN_DIR/fetchd.log")"
    fi
    if run_healthcheck; then
        fail "HEALTHCHECK CMD passes with fetchd stopped"
    else
        pass "HEALTHCHECK CMD with fetchd stopped: exit non-zero"
    fi
}

# After every mount is gone: nothing in the image changed since the stamp (taken after the COPY
# lines), so only the volumes were written; and all that was written there is the user's.
check_writes() {
    local changed foreign
    mapfile -t changed < <(find "$ROOTFS" -newer "$RUN_DIR/stamp" -printf '/%P\n' | head -n 20)
    if ((${#changed[@]} == 0)); then
        pass "nothing outside the VOLUMEs (${VOLUMES[*]}) was written"
    else
        fail "written outside the VOLUMEs (first 20):" "${changed[@]}"
    fi
    mapfile -t foreign < <(find "$VOLUME_DIR" -mindepth 1 ! -user "${USER_SPEC%%:*}" -printf '%P\n' | head -n 20)
    if ((${#foreign[@]} == 0)); then
        pass "everything in the volumes belongs to $USER_SPEC:"
        find "$VOLUME_DIR" -mindepth 1 -printf '%P\n' | sed 's|^var_lib_fetchd|/var/lib/fetchd|;s|^downloads|/downloads|' |
            sort | paste -sd' ' | fold -s -w 90 | indent
    else
        fail "in the volumes but not the user's (first 20):" "${foreign[@]}"
    fi
}

# ---- main ------------------------------------------------------------------------------------

main() {
    local started=$SECONDS phase
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    ensure_host_tools
    mkdir -p "$SCRATCH"
    unmount_all  # left by a killed run
    read_dockerfile

    phase=$SECONDS
    build_binary
    echo "build: $((SECONDS - phase)) s"

    phase=$SECONDS
    assemble_rootfs
    echo "rootfs: $((SECONDS - phase)) s"

    phase=$SECONDS
    rm -rf "$RUN_DIR"
    mkdir -p "$RUN_DIR"
    install_copies
    # Everything fetchd writes from here on must be in a volume (check_writes).
    touch "$RUN_DIR/stamp"
    mount_volumes
    mount_runtime "$ROOTFS"

    check_dockerfile_consistency
    check_libraries
    check_refuses_without_tokens
    start_origin
    if start_fetchd; then
        check_process
        check_probes
        check_healthcheck_up
        check_download
        check_stop
    fi
    stop_process "$FETCHD_PID"
    FETCHD_PID=""
    unmount_all
    check_writes
    echo "smoke test: $((SECONDS - phase)) s"

    printf '\ncontainer-check: %d passed, %d failed (%d s)\n' "$PASSED" "$FAILED" "$((SECONDS - started))"
    ((FAILED == 0)) || { echo "fetchd's log: $RUN_DIR/fetchd.log"; exit 1; }
}

main "$@"
