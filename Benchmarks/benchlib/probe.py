"""Measurements taken while something else runs: a paced latency probe and a TCP connection count."""
import http.client
import statistics
import threading
import time


class LatencyProbe:
    """GETs `path` every `interval` seconds on one keep-alive connection, recording each latency."""

    def __init__(self, port: int, path: str = "/healthz", interval: float = 0.02):
        self.port, self.path, self.interval = port, path, interval
        self.latencies_ms: list[float] = []
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        while not self._stop.is_set():
            start = time.perf_counter()
            try:
                conn.request("GET", self.path)
                resp = conn.getresponse()
                resp.read()
                if resp.status != 200:
                    self.errors += 1
                self.latencies_ms.append((time.perf_counter() - start) * 1000)
            except (OSError, http.client.HTTPException):
                self.errors += 1
                conn.close()
            time.sleep(max(0.0, self.interval - (time.perf_counter() - start)))
        conn.close()

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        ordered = sorted(self.latencies_ms)
        return {"samples": len(ordered), "errors": self.errors,
                "p50_ms": statistics.median(ordered),
                "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
                "max_ms": ordered[-1]}


def connections_to(port: int) -> int:
    """Established TCP connections from any local process to 127.0.0.1:port."""
    with open("/proc/net/tcp") as f:
        next(f)
        return sum(1 for line in f
                   if (fields := line.split())[3] == "01" and int(fields[2].split(":")[1], 16) == port)
