"""The live part of test_ssrf_ranges.py, run as root in namespaces of its own:

    unshare --net --mount python3 Tests/e2e/ssrf_namespace_probe.py WORKDIR

A new network namespace has no interface but lo, so nothing can leave the machine. The probe
puts one address of every blocked range on lo (not on a dummy interface: lo needs no driver,
and the kernel this was written on has no dummy module), serves an origin and a webhook receiver on each
(both count the connections they accept), names the addresses in an /etc/hosts bind-mounted for
this mount namespace only, and sends the same requests through two fetchd processes:

- `blocked`, the default policy: every download and every webhook delivery must be refused
  before connecting;
- `control`, with exactly these ranges in FETCHD_ALLOW_NETWORKS: the same requests must get
  through, proving each listener reachable and the refusals the policy's doing.

Prints {"cases": {name: {phase: observations}}, "logs": [fetchd logs]} as JSON on stdout."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from e2e_support import (TERMINAL_STATES, FetchdFactory, Origin, WebhookReceiver, fetchd_binary, holds_for,
                         http_url, sample, scrape, wait_for)

BODY = b"inside the namespace\n"
HOOKED_ORIGIN = "127.0.0.2"  # where the jobs that carry a webhook download from; allowed in both phases


@dataclass(frozen=True)
class Case:
    name: str
    host: str  # the address as URLs give it (a zone as "%lo")
    network: str  # its blocked range, which the control allows
    on_lo: bool = True  # False: the kernel answers it without being assigned, or never will
    listen: str = ""  # where the listeners bind, if not at `host`
    reachable: bool = True  # False: the kernel will not connect there even when fetchd allows it
    # Where the kernel really connects, if elsewhere: fetchd checks the connected peer again
    # before sending (CURLOPT_PREREQFUNCTION), so the control must allow that too.
    peer: str = ""

    @property
    def address(self) -> str:
        """The address fetchd refuses, as it reports it."""
        return self.host.split("%")[0]

    @property
    def webhook_host(self) -> str:
        """A literal blocked address is refused at submit, so webhooks go to a name, resolved
        when delivering. /etc/hosts cannot carry a zone, so a zoned address has no name: only the
        control (which allows it) delivers to its literal."""
        return self.host if "%" in self.host else f"{self.name}.ssrf.test"


CASES = [
    Case("rfc1918-10", "10.0.0.1", "10.0.0.0/8"),
    Case("rfc1918-172", "172.16.0.1", "172.16.0.0/12"),
    Case("rfc1918-192", "192.168.0.1", "192.168.0.0/16"),
    Case("link-local", "169.254.1.1", "169.254.0.0/16"),
    Case("metadata", "169.254.169.254", "169.254.169.254/32"),
    Case("cgnat", "100.64.0.1", "100.64.0.0/10"),
    Case("this-network", "0.0.0.0", "0.0.0.0/8", on_lo=False, peer="127.0.0.1/32"),
    Case("benchmarking", "198.18.0.1", "198.18.0.0/15"),
    Case("reserved", "240.0.0.1", "240.0.0.0/4"),
    # No TCP connection to a multicast address (ENETUNREACH): the listeners take the port on
    # every address instead, and the control expects a network error, not blocked_address.
    Case("multicast", "224.0.0.1", "224.0.0.0/4", on_lo=False, listen="0.0.0.0", reachable=False),
    Case("ula", "fd00::1", "fc00::/7"),
    Case("ipv6-link-local", "fe80::1%lo", "fe80::/10"),
    # A mapped address is connected to over IPv4; 10.0.0.1 is on lo for rfc1918-10.
    Case("ipv4-mapped", "::ffff:10.0.0.1", "::ffff:0:0/96", on_lo=False, listen="10.0.0.1"),
    Case("nat64", "64:ff9b::a00:1", "64:ff9b::/96"),
    Case("6to4", "2002:a00:1::1", "2002::/16"),
    Case("unspecified", "::", "::/128", on_lo=False, peer="::1/128"),
]

PHASES = {
    "blocked": {"FETCHD_ALLOW_PRIVATE_NETWORKS": "false", "FETCHD_ALLOW_NETWORKS": f"{HOOKED_ORIGIN}/32"},
    # An address nothing answers on (multicast) is an outage, retried until the no-progress
    # timeout: a short one ends those jobs.
    "control": {"FETCHD_ALLOW_PRIVATE_NETWORKS": "false", "FETCHD_MAX_ATTEMPTS": "1", "FETCHD_NO_PROGRESS_TIMEOUT": "500ms",
                "FETCHD_ALLOW_NETWORKS": ",".join([f"{HOOKED_ORIGIN}/32"] + [c.network for c in CASES]
                                                  + [c.peer for c in CASES if c.peer])},
}


def configure_network(workdir: Path) -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    for case in CASES:
        if case.on_lo:
            subprocess.run(["ip", "address", "add", case.address, "dev", "lo"] + (["nodad"] if ":" in case.host else []),
                           check=True)
    hosts = workdir / "hosts"
    names = "".join(f"{c.address} {c.webhook_host}\n" for c in CASES if c.webhook_host != c.host)
    hosts.write_text("127.0.0.1 localhost\n" + names)
    subprocess.run(["mount", "--bind", str(hosts), "/etc/hosts"], check=True)


def deliveries(fd) -> dict[str, float]:
    """Webhook delivery attempts so far, by outcome, once none is pending."""
    wait_for(lambda: sample(scrape(fd), "fetchd_webhook_backlog") == 0, message="webhook deliveries to settle")
    text = scrape(fd)
    return {outcome: sample(text, "fetchd_webhook_deliveries_total", f'outcome="{outcome}"', default=0)
            for outcome in ("delivered", "retry", "failed")}


REFUSAL = re.compile(r"connection refused by the address policy.*?address=(\S+)")


def refusals_from_now(fd):
    """A function that returns the addresses fetchd has logged as refused since this call."""
    log = fd.logs[-1]
    start = log.stat().st_size
    return lambda: REFUSAL.findall(log.read_bytes()[start:].decode(errors="replace"))


def download(fd, case: Case, origin: Origin) -> dict:
    refused = refusals_from_now(fd)
    job = fd.api.submit({"url": http_url(case.host, origin.port, "/file"), "destination": f"{case.name}.bin"})
    job = fd.api.wait_state(job["id"], TERMINAL_STATES)
    return {"state": job["state"], "error": job["error"], "attempts": job["attempts"],
            "file": fd.dest(f"{case.name}.bin").exists(), "refused": refused()}


def webhook(fd, phase: str, case: Case, receiver: WebhookReceiver, hooked_url: str) -> dict:
    """A job from `hooked_url`, alone in its session, with its webhooks going to the case's address."""
    observed = {}
    if phase == "blocked":  # parked until 2099: even if accepted, it never delivers
        observed["literal_status"] = fd.api.post("/downloads", {
            "url": hooked_url, "destination": f"{case.name}.literal", "earliestBeginDate": "2099-01-01T00:00:00Z",
            "webhookURL": http_url(case.host, receiver.port, "/hooks")}).status
        if case.webhook_host == case.host:  # no name to deliver to: refused at submit is the whole story
            return observed
    before, refused = deliveries(fd), refusals_from_now(fd)
    job = fd.api.submit({"url": hooked_url, "destination": f"{case.name}.hooked", "session": case.name,
                         "webhookURL": http_url(case.webhook_host, receiver.port, "/hooks")})
    fd.api.wait_state(job["id"], "completed")
    after = deliveries(fd)  # of download.completed and session.finished, both to the case's URL
    observed.update({outcome: after[outcome] - before[outcome] for outcome in after})
    observed["verified"] = sum(d.verified for d in receiver.events(job_id=job["id"]))
    observed["refused"] = refused()
    return observed


def exercise(fd, phase: str, case: Case, origin: Origin, receiver: WebhookReceiver, hooked_url: str) -> dict:
    try:
        return {"download": download(fd, case, origin), "webhook": webhook(fd, phase, case, receiver, hooked_url)}
    except Exception as error:  # noqa: BLE001 - reported against this case; the others still run
        return {"probe_error": f"{type(error).__name__}: {error}"}


def accepted(servers: dict) -> dict[str, dict[str, int]]:
    """Connections accepted so far by each case's origin and webhook receiver."""
    return {name: {"download": origin.accepted, "webhook": receiver.accepted}
            for name, (origin, receiver) in servers.items()}


def settled_accepts(servers: dict) -> dict[str, dict[str, int]]:
    """Accept counts, once a connection the kernel already queued would have been accepted."""
    counts = accepted(servers)
    holds_for(lambda: accepted(servers) == counts, 0.3)
    return accepted(servers)


def main(workdir: Path) -> dict:
    configure_network(workdir)
    servers = {c.name: (Origin(c.listen or c.host), WebhookReceiver(host=c.listen or c.host)) for c in CASES}
    hooked = Origin(HOOKED_ORIGIN)
    everything = [hooked] + [server for pair in servers.values() for server in pair]
    factory = FetchdFactory(fetchd_binary(), workdir)
    report: dict = {"cases": {c.name: {} for c in CASES}, "logs": []}
    try:
        for server in everything:
            server.start()
        hooked_url = hooked.add("/file", BODY)
        for origin, _ in servers.values():
            origin.add("/file", BODY)
        for phase, env in PHASES.items():
            before = accepted(servers)
            fd = factory(env=env)
            report["logs"] += [str(path) for path in fd.logs]
            for case in CASES:
                report["cases"][case.name][phase] = exercise(fd, phase, case, *servers[case.name], hooked_url)
            after = settled_accepts(servers)
            for name, counts in after.items():
                report["cases"][name][phase]["accepted"] = {kind: n - before[name][kind] for kind, n in counts.items()}
            fd.stop()
    finally:
        factory.close()
        for server in everything:
            server.stop()
    return report


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1])), indent=1))
