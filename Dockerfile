# fetchd container image.
#
#   docker build -t fetchd .
#   docker run -p 8080:8080 -e FETCHD_API_TOKENS=change-me \
#       -v fetchd-data:/var/lib/fetchd -v "$PWD/downloads:/downloads" fetchd
#
# The process writes only to the two volumes, so the container can run with --read-only.
# docker stop waits 10 s by default, as long as FETCHD_SHUTDOWN_TIMEOUT; give it a little
# more (--stop-timeout 15) so in-flight work is checkpointed before SIGKILL. Even a SIGKILL
# loses nothing: the next start resumes every job.

# ---- build ---------------------------------------------------------------------------
# Pinned to the toolchain fetchd is developed with.
FROM swift:6.3.1-bookworm AS build

# The Swift image already carries most of these; installing them explicitly keeps the
# build independent of that. Versions follow the bookworm archive.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libcurl4-openssl-dev libsqlite3-dev libpq-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /build

# Dependencies first: this layer stays cached until the manifest or the pins change.
COPY Package.* ./
RUN if [ -f Package.resolved ]; then swift package resolve --force-resolved-versions; \
    else swift package resolve; fi

# Test targets are declared in the manifest, so their directories must exist to build.
COPY Sources ./Sources
COPY Tests ./Tests
RUN swift build -c release --static-swift-stdlib --product fetchd \
    && install -D -m 0755 "$(swift build -c release --show-bin-path)/fetchd" /staging/fetchd \
    && install -D -m 0755 /usr/libexec/swift/linux/swift-backtrace-static /staging/swift-backtrace-static

# ---- run -----------------------------------------------------------------------------
FROM debian:bookworm-slim

LABEL org.opencontainers.image.title="fetchd" \
      org.opencontainers.image.description="A persistent HTTP(S) download queue with webhooks, modelled on URLSession background sessions"

# Only the shared libraries fetchd links against (the Swift runtime is static) and the CA
# bundle for https (an organisation's own CAs come on top with FETCHD_CA_BUNDLE: mount the PEM
# file read-only, e.g. -v ./ca.pem:/mnt/ca.pem:ro -e FETCHD_CA_BUNDLE=/mnt/ca.pem).
# Unpinned on purpose: security updates from the bookworm archive.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates libcurl4 libsqlite3-0 libpq5 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 fetchd \
    && useradd --system --uid 10001 --gid fetchd --no-create-home \
        --home-dir /var/lib/fetchd --shell /usr/sbin/nologin fetchd \
    && install -d -o fetchd -g fetchd -m 0750 /var/lib/fetchd /downloads

COPY --from=build /staging/fetchd /usr/local/bin/fetchd
COPY --from=build /staging/swift-backtrace-static /usr/local/libexec/fetchd/swift-backtrace-static

# Listening on 0.0.0.0 is not loopback: fetchd refuses to start there without
# FETCHD_API_TOKENS (or FETCHD_API_TOKENS_FILE, e.g. a mounted secret). Pass one at run
# time; never bake tokens into the image. Every other setting is in docs/configuration.md.
# Partial downloads stage on the download root's volume, so that a finished file is linked into
# place atomically (fetchd refuses a staging directory on another file system).
ENV FETCHD_LISTEN=0.0.0.0:8080 \
    FETCHD_DATA_DIR=/var/lib/fetchd \
    FETCHD_DOWNLOAD_ROOT=/downloads \
    FETCHD_STAGING_DIR=/downloads/.fetchd-partial \
    SWIFT_BACKTRACE=enable=yes,sanitize=yes,threads=all,images=all,interactive=no,swift-backtrace=/usr/local/libexec/fetchd/swift-backtrace-static

# The SQLite store and partial downloads; the download root. Owned by the fetchd user
# (new named volumes inherit that ownership) and the only places it writes.
VOLUME ["/var/lib/fetchd", "/downloads"]

EXPOSE 8080

USER 10001:10001

STOPSIGNAL SIGTERM

# The runtime image has no HTTP client, so the check speaks HTTP/1.1 through bash's
# /dev/tcp: GET /healthz on the port of FETCHD_LISTEN and require a 200 status line.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["bash", "-c", "l=${FETCHD_LISTEN:-127.0.0.1:8080}; h=${l%:*}; h=${h#\\[}; h=${h%\\]}; case $h in ''|0.0.0.0) h=127.0.0.1 ;; ::) h=::1 ;; esac; exec 3<>/dev/tcp/$h/${l##*:} || exit 1; printf 'GET /healthz HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' >&3; IFS= read -r -t 4 s <&3; while read -r -t 4 _ <&3; do :; done; [[ $s == HTTP/1.?' 200'* ]]"]

ENTRYPOINT ["/usr/local/bin/fetchd"]
