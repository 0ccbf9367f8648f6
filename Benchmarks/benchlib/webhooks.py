"""Runs webhook_receiver.py as its own process (so it does not share the driver's GIL); the secret
fetchd signs the benchmarks' webhooks with; curl posting as many webhooks, for the floor's row."""
import base64
import json
import os
import sys
import urllib.request

from . import procs
from .origin import free_port

# What fetchd signs the benchmarks' webhooks with (FETCHD_WEBHOOK_SECRET), as a deployment would:
# the durable floor computes an HMAC per event too. Signing measured level with not signing (a
# paired CPU ratio of 1.004 over ten rounds of the small files).
SIGNING_SECRET = "whsec_" + base64.b64encode(bytes(range(32))).decode()


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


def post_with_curl(receiver: WebhookReceiver, count: int, work: str, parallel: int = 16) -> tuple[float, float]:
    """curl POSTing `count` webhooks to `receiver`, `parallel` at once over kept-alive connections:
    the least a sender spends delivering one per small file, to set beside the durable floor (whose
    HMAC stands for the signing). Each body is as long as the floor's event payload (600 bytes),
    with the Standard Webhooks headers; its type, `floor.webhook`, counts apart from fetchd's.
    Returns curl's wall and CPU seconds; raises unless the receiver counted all of them."""
    body = os.path.join(work, "webhook.json")
    event = json.dumps({"type": "floor.webhook", "timestamp": "2026-12-06T12:00:00.000Z", "data": {"state": "completed"}})
    with open(body, "w") as f:
        f.write(event[:-1] + " " * (600 - len(event)) + "}")
    before = receiver.counts().get("floor.webhook", 0)
    # One URL glob, as curl fetches the files: the receiver answers any path.
    result = procs.measured(lambda: procs.run([
        "curl", "-sS", "--fail", "--parallel", "--parallel-max", str(parallel), "--data-binary", f"@{body}",
        "-H", "Content-Type: application/json", "-H", f"webhook-id: msg_{'0' * 26}", "-H", "webhook-timestamp: 1765022400",
        "-H", f"webhook-signature: v1,{'A' * 43}=", f"{receiver.url}/[1-{count}]"]))
    arrived = receiver.counts().get("floor.webhook", 0) - before
    if arrived != count:
        raise RuntimeError(f"curl posted {count} webhooks but the receiver counted {arrived}")
    return result
