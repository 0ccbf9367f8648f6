#!/usr/bin/env python3
"""How closely a bandwidth cap holds over 10 s windows, two ways, on loopback.

  engine       fetchd's Transfer engine (token buckets, pause/unpause): runs the
               BandwidthAccuracyReport suite of the unit tests (build them first with
               `swift build --build-tests`).
  curl-option  libcurl's own CURLOPT_MAX_RECV_SPEED_LARGE, re-set on running handles of one
               multi handle as transfers come and go and the cap changes (PycURL over the
               system libcurl; Debian package python3-pycurl).

Both run the same plan: a 4 MiB/s cap over three transfers; at 12 s one leaves; at 18 s a
fourth starts with its own cap of 512 KiB/s; at 25 s the cap drops to 2 MiB/s; stop at 45 s.
Prints the rate per second and, for every 10 s window under one cap, rate / cap.
"""
import argparse
import http.server
import os
import subprocess
import sys
import threading
import time

MIB = 1 << 20
PLAN_END = 45.0


class EndlessOrigin(http.server.BaseHTTPRequestHandler):
    """Serves 1 GiB of zeros per request, as fast as the client reads."""

    protocol_version = "HTTP/1.1"
    size = 1 << 30
    block = b"\0" * (256 * 1024)

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(self.size))
        self.end_headers()
        sent = 0
        try:
            while sent < self.size:
                self.wfile.write(self.block)
                sent += len(self.block)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args):
        pass


def report(samples, caps):
    print("second, MiB/s over the second before")
    for index in range(4, len(samples), 4):
        (t0, b0), (t1, b1) = samples[index - 4], samples[index]
        print(f"  {t1:5.1f}  {(b1 - b0) / (t1 - t0) / MIB:6.3f}")
    print("10 s windows (start, end, MiB/s, cap MiB/s, rate/cap)")
    ratios = []
    for window in range(0, int(PLAN_END) - 9):
        current = [cap for start, cap in caps if start <= window]
        if not current or any(window < start < window + 10 for start, _ in caps):
            continue
        inside = [s for s in samples if window <= s[0] <= window + 10]
        if len(inside) < 2:
            continue
        (t0, b0), (t1, b1) = inside[0], inside[-1]
        rate = (b1 - b0) / (t1 - t0)
        ratios.append(rate / current[-1])
        print(f"  {t0:5.1f} {t1:5.1f}  {rate / MIB:6.3f}  {current[-1] / MIB:5.2f}  {rate / current[-1]:5.3f}")
    if ratios:
        print(f"rate/cap over 10 s windows: min {min(ratios):.3f}, max {max(ratios):.3f}")


def curl_option():
    import pycurl  # Debian python3-pycurl: the system libcurl, the one fetchd links

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), EndlessOrigin)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    multi = pycurl.CurlMulti()
    received = {}
    handles = {}

    def start(name, own_cap=None):
        handle = pycurl.Curl()
        handle.setopt(pycurl.URL, url)
        received[name] = 0

        def write(data, name=name):
            received[name] += len(data)

        handle.setopt(pycurl.WRITEFUNCTION, write)
        handle.own_cap = own_cap
        multi.add_handle(handle)
        handles[name] = handle

    def divide(cap):
        # The share the engine would give: even, with a capped transfer held to its own cap.
        capped = {n: h for n, h in handles.items() if h.own_cap}
        rest = cap - sum(min(h.own_cap, cap // len(handles)) for h in capped.values())
        free = [h for h in handles.values() if not h.own_cap]
        for handle in capped.values():
            handle.setopt(pycurl.MAX_RECV_SPEED_LARGE, min(handle.own_cap, cap // len(handles)))
        for handle in free:
            handle.setopt(pycurl.MAX_RECV_SPEED_LARGE, rest // len(free))

    cap = 4 * MIB
    caps = [(0, cap)]
    for name in "abc":
        start(name)
    divide(cap)
    begin = time.monotonic()
    samples, step, next_sample = [], 0, 0.25
    while True:
        multi.perform()
        multi.select(0.05)
        now = time.monotonic() - begin
        if now >= next_sample:
            samples.append((now, sum(received.values())))
            next_sample += 0.25
        if step == 0 and now >= 12:
            multi.remove_handle(handles.pop("c"))
            divide(cap)
            step = 1
        if step == 1 and now >= 18:
            start("d", own_cap=512 * 1024)
            divide(cap)
            step = 2
        if step == 2 and now >= 25:
            cap = 2 * MIB
            caps.append((25, cap))
            divide(cap)
            step = 3
        if now >= PLAN_END:
            break
    server.shutdown()
    report(samples, caps)


def engine():
    env = dict(os.environ, FETCHD_BANDWIDTH_REPORT="1")
    run = subprocess.run(["swift", "test", "--skip-build", "--filter", "BandwidthAccuracyReport"],
                         env=env, capture_output=True, text=True)
    lines = [line for line in run.stdout.splitlines() if line.startswith(("  ", "bandwidth report"))]
    print("\n".join(lines))
    if run.returncode != 0:
        sys.exit(run.stdout[-2000:] + run.stderr[-2000:])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mechanism", choices=["engine", "curl-option"])
    args = parser.parse_args()
    engine() if args.mechanism == "engine" else curl_option()


if __name__ == "__main__":
    main()
