"""Runs webhook_receiver.py as its own process (so it does not share the driver's GIL)."""
import json
import os
import sys
import urllib.request

from . import procs
from .origin import free_port


class WebhookReceiver:
    def __init__(self):
        self.port = free_port()
        script = os.path.join(os.path.dirname(__file__), "webhook_receiver.py")
        self.proc = procs.spawn([sys.executable, script, str(self.port)])
        procs.wait_until(self._up, 10, what="webhook receiver")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def counts(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=30) as resp:
            return json.load(resp)

    def wait_for(self, kind: str, count: int, timeout: float) -> dict:
        """Waits until `count` deliveries of `kind` have arrived in all (not polling: the receiver
        answers once they have); returns the counts then."""
        url = f"http://127.0.0.1:{self.port}/wait?type={kind}&count={count}"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                return json.load(resp)
        except TimeoutError:
            raise TimeoutError(f"{count} {kind} webhooks not in after {timeout:.0f} s: {self.counts()}") from None

    def _up(self) -> bool:
        try:
            self.counts()
            return True
        except OSError:
            return False

    def stop(self):
        procs.stop(self.proc, timeout=5)
