"""Abuse of a running fetchd, with measurements: slow-loris connections and a pipelining flood.

    python3 abuse.py slowloris HOST PORT PID [--connections 500] [--seconds 20]
    python3 abuse.py flood HOST PORT PID [--clients 1] [--requests 10000] [--padding 1000]

PID is fetchd's, for its resident memory. Only loopback addresses are accepted.
"""

import argparse
import ipaddress
import selectors
import socket
import statistics
import threading
import time

LORIS_HEAD = b"GET /healthz HTTP/1.1\r\nHost: loris\r\nX-Slow: "


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


class RSSSampler(threading.Thread):
    """Samples a process's resident memory every 100 ms until stopped."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.samples = [rss_mib(pid)]
        self.done = threading.Event()

    def run(self):
        while not self.done.wait(0.1):
            self.samples.append(rss_mib(self.pid))

    def stop(self):
        self.done.set()
        self.join()
        self.samples.append(rss_mib(self.pid))
        return self.samples


def read_response(sock):
    """Reads one response with a Content-Length body; returns its status."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before a response")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed mid-body")
        body += chunk
    return int(head.split(b" ")[1])


def probe_healthz(host, port, every, stop, latencies, failures):
    """GET /healthz on a new connection every `every` seconds; records each latency in ms."""
    next_at = time.monotonic()
    while not stop.is_set():
        started = time.monotonic()
        try:
            with socket.create_connection((host, port), timeout=5) as sock:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n")
                status = read_response(sock)
            if status == 200:
                latencies.append((time.monotonic() - started) * 1000)
            else:
                failures.append(f"status {status}")
        except OSError as error:
            failures.append(str(error))
        next_at += every
        stop.wait(max(0.0, next_at - time.monotonic()))


def slowloris(args):
    """Holds `connections` slow heads open for `seconds` (reopening those fetchd cuts) while
    probing /healthz every 100 ms."""
    selector = selectors.DefaultSelector()

    def open_loris():
        sock = socket.create_connection((args.host, args.port))
        sock.sendall(LORIS_HEAD)
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
        return sock

    sampler = RSSSampler(args.pid)
    sampler.start()
    lorises = [open_loris() for _ in range(args.connections)]
    stop = threading.Event()
    latencies, failures = [], []
    prober = threading.Thread(target=probe_healthz, args=(args.host, args.port, 0.1, stop, latencies, failures))
    prober.start()

    cut = 0
    deadline = time.monotonic() + args.seconds
    next_trickle = time.monotonic()
    while time.monotonic() < deadline:
        # fetchd answering (408) or closing a slow head: count it and take its place.
        for key, _ in selector.select(timeout=0.05):
            sock = key.fileobj
            try:
                sock.recv(65536)
            except OSError:
                pass
            selector.unregister(sock)
            sock.close()
            lorises.remove(sock)
            lorises.append(open_loris())
            cut += 1
        if time.monotonic() >= next_trickle:
            # One more byte on every connection each second.
            for sock in lorises:
                try:
                    sock.send(b"a")
                except OSError:
                    pass
            next_trickle += 1.0
    stop.set()
    prober.join()
    rss = sampler.stop()
    for sock in lorises:
        sock.close()

    over = sum(1 for latency in latencies if latency >= 100)
    print(f"slow-loris: {args.connections} connections held for {args.seconds} s; "
          f"fetchd cut {cut} slow heads (each reopened)")
    if latencies:
        ordered = sorted(latencies)
        print(f"  /healthz every 100 ms: {len(latencies)} answered, {len(failures)} failed; latency ms "
              f"median {statistics.median(ordered):.1f}, p99 {ordered[int(len(ordered) * 0.99) - 1]:.1f}, "
              f"max {ordered[-1]:.1f}; {over} at or over 100 ms")
    else:
        print(f"  /healthz: none answered, {len(failures)} failed")
    for failure in failures[:3]:
        print(f"  failure: {failure}")
    print(f"  fetchd RSS MiB: before {rss[0]:.1f}, max {max(rss):.1f}, after {rss[-1]:.1f}")
    return 0 if latencies and not failures and over == 0 else 1


def flood(args):
    """Each client pipelines `requests` GET /healthz (each with a header of `padding` bytes, so
    that they overflow the socket buffers) without reading for as long as fetchd takes them (at
    most 5 s), then reads every response."""
    request = b"GET /healthz HTTP/1.1\r\nHost: flood\r\nX-Padding: " + b"p" * args.padding + b"\r\n\r\n"
    payload = request * args.requests
    sampler = RSSSampler(args.pid)
    sampler.start()
    clients = []
    for _ in range(args.clients):
        sock = socket.create_connection((args.host, args.port))
        sock.setblocking(False)
        clients.append([sock, 0])
    give_up = time.monotonic() + 5
    while time.monotonic() < give_up and any(sent < len(payload) for _, sent in clients):
        progressed = False
        for client in clients:
            sock, sent = client
            if sent == len(payload):
                continue
            try:
                count = sock.send(payload[sent:sent + 65536])
                client[1] += count
                progressed = progressed or count > 0
            except BlockingIOError:
                pass
        if not progressed:
            time.sleep(0.01)
    held_back = sum(1 for _, sent in clients if sent < len(payload))
    unread_rss = max(sampler.samples)

    answered = 0
    for sock, sent in clients:
        sock.setblocking(True)
        sock.settimeout(10)
        reader = sock.makefile("rb")
        pending = payload[sent:]
        sender = threading.Thread(target=sock.sendall, args=(pending,)) if pending else None
        if sender:
            sender.start()
        for _ in range(args.requests):
            status_line = reader.readline()
            if not status_line.startswith(b"HTTP/1.1 200"):
                break
            length = 0
            while (line := reader.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            reader.read(length)
            answered += 1
        if sender:
            sender.join()
        sock.close()
    rss = sampler.stop()
    total = args.clients * args.requests
    print(f"pipelining flood: {args.clients} client(s) x {args.requests} requests of {len(request)} bytes sent without reading; "
          f"{held_back} held back by TCP flow control; {answered} of {total} answered in order")
    print(f"  fetchd RSS MiB: before {rss[0]:.1f}, max while unread {unread_rss:.1f}, max {max(rss):.1f}, "
          f"after {rss[-1]:.1f}")
    return 0 if answered == total and max(rss) < 100 else 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["slowloris", "flood"])
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("pid", type=int)
    parser.add_argument("--connections", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--requests", type=int, default=10000)
    parser.add_argument("--padding", type=int, default=1000)
    args = parser.parse_args()
    if not ipaddress.ip_address(args.host).is_loopback:
        raise SystemExit("abuse.py only targets loopback addresses")
    raise SystemExit(slowloris(args) if args.mode == "slowloris" else flood(args))


if __name__ == "__main__":
    main()
