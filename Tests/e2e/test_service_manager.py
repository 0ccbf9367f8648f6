"""fetchd and its service manager: the sd_notify protocol over a real datagram socket as
$NOTIFY_SOCKET (READY, STATUS, WATCHDOG, STOPPING) and socket activation (LISTEN_FDS), as
systemd drives them; here the test plays systemd."""

from __future__ import annotations

import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from e2e_support import holds_for, wait_for


class NotifyListener:
    """A bound AF_UNIX datagram socket that records every message with the time it arrived."""

    def __init__(self):
        self.directory = tempfile.TemporaryDirectory(prefix="fetchd-notify-", dir="/tmp")
        self.path = str(Path(self.directory.name) / "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.2)
        self.messages: list[tuple[float, dict[str, str]]] = []
        self.lock = threading.Lock()
        self.running = True
        self.thread = threading.Thread(target=self._receive, daemon=True)
        self.thread.start()

    def _receive(self):
        while self.running:
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            fields = dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line)
            with self.lock:
                self.messages.append((time.monotonic(), fields))

    def with_field(self, name: str) -> list[tuple[float, dict[str, str]]]:
        with self.lock:
            return [(at, fields) for at, fields in self.messages if name in fields]

    def close(self):
        self.running = False
        self.thread.join()
        self.sock.close()
        self.directory.cleanup()


@pytest.fixture
def notify():
    listener = NotifyListener()
    yield listener
    listener.close()


def get_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_ready_comes_once_readyz_answers_and_stopping_at_sigterm(fetchd, notify):
    fd = fetchd(env={"NOTIFY_SOCKET": notify.path}, start=False)
    starter = threading.Thread(target=fd.start)
    starter.start()
    # The moment READY arrives, /readyz must already answer 200 on the address it names.
    at, ready = wait_for(lambda: (notify.with_field("READY") or [None])[0], message="READY=1")
    address = ready["STATUS"].removeprefix("listening on ")
    assert get_status(f"http://{address}/readyz") == 200, ready
    starter.join()
    assert ready["READY"] == "1" and ready["MAINPID"] == str(fd.proc.pid)
    assert address.endswith(f":{fd.port}")
    assert len(notify.with_field("READY")) == 1
    assert fd.stop(signal.SIGTERM) == 0
    stopping = notify.with_field("STOPPING")
    assert stopping and stopping[0][1]["STOPPING"] == "1" and stopping[0][0] > at


def test_watchdog_pings_at_half_the_interval_and_stop_while_the_scheduler_is_held(fetchd, notify):
    fd = fetchd(env={"NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "400000", "FETCHD_TEST_SIGNALS": "1"})
    pings = lambda: [at for at, fields in notify.with_field("WATCHDOG") if fields["WATCHDOG"] == "1"]
    wait_for(lambda: len(pings()) >= 6, timeout=10, message="six WATCHDOG=1")
    gaps = [b - a for a, b in zip(pings(), pings()[1:])]
    assert 0.12 < statistics.median(gaps) < 0.35, gaps
    status = notify.with_field("WATCHDOG")[-1][1]["STATUS"]
    assert status.startswith("running 0, queued 0"), status

    fd.proc.send_signal(signal.SIGUSR1)  # holds the scheduler's queue
    # A probe already past the scheduler may still ping once; then they stop.
    wait_for(lambda: time.monotonic() - pings()[-1] > 1.0, timeout=5, message="the pings to stop")
    held = len(pings())
    assert holds_for(lambda: len(pings()) == held, 1.0), "a ping while the scheduler was held"
    assert get_status(f"{fd.base_url}/healthz") == 200  # the process itself still answers

    fd.proc.send_signal(signal.SIGUSR2)  # lets it go
    wait_for(lambda: len(pings()) >= held + 2, timeout=5, message="the pings to resume")
    assert fd.stop(signal.SIGTERM) == 0


def test_a_watchdog_meant_for_another_process_is_not_fed(fetchd, notify):
    fd = fetchd(env={"NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1"})
    wait_for(lambda: notify.with_field("READY"), message="READY=1")
    assert holds_for(lambda: not notify.with_field("WATCHDOG"), 0.6)
    assert fd.stop() == 0


def test_a_malformed_watchdog_interval_stops_start_up_naming_it(fetchd_bin, notify, tmp_path):
    result = subprocess.run([str(fetchd_bin)], capture_output=True, text=True, timeout=20, env={
        "NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "soon", "FETCHD_LISTEN": "127.0.0.1:0",
        "FETCHD_DATA_DIR": str(tmp_path / "data"), "FETCHD_DOWNLOAD_ROOT": str(tmp_path / "root")})
    assert result.returncode == 2
    assert "WATCHDOG_USEC=soon" in result.stderr


def passed_socket(fd, host: str) -> socket.socket:
    """Hands fetchd a listening socket as systemd would: descriptor 3, LISTEN_FDS=1, and
    LISTEN_PID set to fetchd's own pid by the shell that execs it."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind((host, 0))
    listener.listen(16)
    n = listener.fileno()
    fd.pass_fds = (n,)
    fd.wrapper = ["bash", "-c", f'export LISTEN_PID=$$ LISTEN_FDS=1; exec "$0" 3<&{n} {n}<&-']
    return listener


def test_serves_on_a_passed_socket(fetchd):
    fd = fetchd(start=False)
    listener = passed_socket(fd, "127.0.0.1")
    with listener:
        fd.start()
        port = listener.getsockname()[1]
        assert fd.port == port  # not the free port FETCHD_LISTEN=127.0.0.1:0 would have bound
        assert get_status(f"http://127.0.0.1:{port}/readyz") == 200
        job = fd.api.submit({"url": "http://127.0.0.1:1/x", "destination": "x"})
        assert fd.api.job(job["id"])["id"] == job["id"]
        assert fd.stop() == 0


def test_a_passed_socket_on_every_address_needs_tokens(fetchd):
    fd = fetchd(start=False)
    with passed_socket(fd, "0.0.0.0"):
        with pytest.raises(AssertionError, match="FETCHD_API_TOKENS"):
            fd.start(timeout=10)
        assert fd.proc.wait(timeout=10) == 2
