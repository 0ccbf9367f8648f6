"""14. fileservers: one 512 MiB file (256 MiB with --quick) over plain FTP from vsftpd and over
SFTP from OpenSSH's sshd, both on loopback, to disk; fetchd vs curl -o (and `curl | tee |
sha256sum; sync FILE`, fetchd's work) vs aria2c.

The servers are the end-to-end tests' (Tests/e2e/file_servers.py): they log in system accounts,
so this scenario needs root. fetchd also computes SHA-256 while downloading and fsyncs before it
reports `completed`. curl and aria2c do not check the SFTP host key (fetchd does).
"""
import os
import secrets
import sys

from benchlib import procs
from benchlib.fetchd import Fetchd
from benchlib.origin import make_file
from benchlib.table import Row
from .common import aria2c, curl_hashing_and_syncing, empty_dir, fetch_once, throughput_rounds

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "Tests", "e2e"))
from file_servers import Files, Sshd, Vsftpd  # noqa: E402

NOTE = "fetchd: SHA-256 + fsync"


def run(ctx) -> list[Row]:
    if os.geteuid() != 0:
        raise RuntimeError("the FTP and SFTP servers log in system accounts: run as root")
    size = (256 if ctx.quick else 512) << 20
    cached = os.path.join(ctx.cache, "fileservers", "big.bin")
    make_file(cached, size)
    os.chmod(cached, 0o644)
    files = Files()
    password = "pw-" + secrets.token_hex(8)
    servers = []
    try:
        os.link(cached, files.dir / "big.bin")
        ftp = Vsftpd(files.dir.parent / f"{files.dir.name}-vsftpd", files, password)
        servers.append(ftp)
        sftp = Sshd(files.dir.parent / f"{files.dir.name}-sshd", password)
        servers.append(sftp)
        return measure(ctx, size, "FTP", ftp.url("big.bin", password=password), sftp) + \
            measure(ctx, size, "SFTP", sftp.url(files.dir / "big.bin", password=password), sftp)
    finally:
        for server in servers:
            server.stop()
        files.remove()


def measure(ctx, size: int, scheme: str, url: str, sftp) -> list[Row]:
    label = f"14 fileservers {scheme} {size >> 20} MiB"
    fetchd = Fetchd(ctx.fetchd_bin, ctx.fresh(f"fileservers-{scheme.lower()}-fetchd"),
                    FETCHD_SSH_KNOWN_HOSTS=str(sftp.known_hosts), FETCHD_FTP_TLS="never")
    out = empty_dir(os.path.join(ctx.workdir, f"fileservers-{scheme.lower()}-out"))
    target = os.path.join(out, "big.bin")
    tools = {
        "fetchd": lambda r: fetch_once(fetchd, label, {"url": url, "destination": f"r{r}.bin"}),
        "curl -o": lambda r: procs.run(["curl", "-sS", "--fail", "--insecure", "-o", target, url]),
        "curl|tee|sha256sum; sync": lambda r: procs.run(curl_hashing_and_syncing(url, target, "--insecure")),
        "aria2c": lambda r: procs.run(aria2c("-d", out, "-o", "big.bin", url)),
    }
    with ctx.profiled(fetchd.pid, f"fileservers-{scheme.lower()}"):
        mib_s, cpu = throughput_rounds(ctx, tools, size, fetchd.pid, label, target)
    fetchd.stop()
    return [
        Row(label, "throughput", "MiB/s", mib_s["fetchd"], "curl -o", mib_s["curl -o"], "ratio >= 0.95", NOTE),
        Row(label, "throughput", "MiB/s", mib_s["fetchd"], "curl + sha256sum + fsync", mib_s["curl|tee|sha256sum; sync"],
            note=NOTE),
        Row(label, "throughput", "MiB/s", mib_s["fetchd"], "aria2c", mib_s["aria2c"], "ratio >= 1.0", NOTE),
        Row(label, "CPU time (user + sys)", "s", cpu["fetchd"], "curl -o", cpu["curl -o"], note=NOTE),
    ]
