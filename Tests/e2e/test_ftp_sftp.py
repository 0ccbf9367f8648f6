"""Downloads and uploads over ftp:// (plain and AUTH TLS), ftps:// and sftp:// with a real
vsftpd and a real sshd on loopback: digests, resume after a cut and after kill -9, a file
changed between attempts, login and refusal errors, host keys, FETCHD_FTP_TLS, credentials kept
out of sight, the egress policy, and mirrors that mix https:// and sftp://."""

from __future__ import annotations

import os
import secrets
import socket
import time
from pathlib import Path

import pytest

from e2e_support import sha256_hex, wait_for
from file_servers import KEY_USER, Files, MisdirectingFTP, Sshd, Vsftpd, free_port
from tls_support import Certificates, NginxOrigin

if os.geteuid() != 0:
    pytest.skip("the file servers log in system accounts: run as root", allow_module_level=True)

PASSWORD = "pw-" + secrets.token_hex(8)
SIZE = 3 * 1024 * 1024


@pytest.fixture(scope="module")
def files():
    f = Files()
    yield f
    f.remove()


@pytest.fixture(scope="module")
def ftp(files, tmp_path_factory):
    server = Vsftpd(tmp_path_factory.mktemp("vsftpd"), files, PASSWORD)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def ftps(files, tmp_path_factory):
    server = Vsftpd(tmp_path_factory.mktemp("vsftpd-tls"), files, PASSWORD, tls=True)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def sftp(tmp_path_factory):
    server = Sshd(tmp_path_factory.mktemp("sshd"), PASSWORD)
    yield server
    server.stop()


def put(files: Files, size: int = SIZE) -> tuple[str, bytes]:
    name = f"f-{secrets.token_hex(4)}.bin"
    data = os.urandom(size)
    files.put(name, data)
    return name, data


def run(fd, url: str, expect: str = "completed", timeout: float = 30, **extra) -> dict:
    job = fd.api.submit({"url": url, "destination": f"out-{secrets.token_hex(4)}.bin", **extra})
    return fd.api.wait_state(job["id"], expect, timeout=timeout)


def attempts(fd, job_id: str) -> list[dict]:
    return fd.api.get(f"/downloads/{job_id}/attempts").json()["items"]


def test_download_over_each_scheme_has_the_right_digest(fetchd, files, ftp, sftp):
    name, data = put(files, 200_000)
    fd = fetchd(env={"FETCHD_SSH_KNOWN_HOSTS": str(sftp.known_hosts), "FETCHD_SSH_KEY": str(sftp.client_key),
                     "FETCHD_FTP_TLS": "never"})
    for url in [ftp.url(name, password=PASSWORD), sftp.url(files.dir / name, password=PASSWORD),
                sftp.url(files.dir / name, user=KEY_USER)]:
        job = run(fd, url)
        assert job["sha256"] == sha256_hex(data), url
        assert job["bytesExpected"] == len(data)


def test_ftps_certificates_are_verified(fetchd, files, ftps):
    # The server refuses logins without TLS (force_local_logins_ssl): an unverified certificate
    # stops the job before the password is sent.
    name, _ = put(files, 1000)
    untrusted = fetchd(env={"FETCHD_FTP_TLS": "require"})
    assert run(untrusted, ftps.url(name, password=PASSWORD), expect="failed")["error"]["code"] == "tls"


def test_ftps_download_has_the_right_digest(fetchd, files, ftps):
    name, data = put(files, 200_000)
    fd = fetchd(env={"FETCHD_CA_BUNDLE": str(ftps.certificate), "FETCHD_FTP_TLS": "require"})
    for _ in range(10):
        job = run(fd, ftps.url(name, password=PASSWORD))
        assert job["sha256"] == sha256_hex(data) and job["attempts"] == 1, job


def test_auth_field_logs_in_and_is_never_shown(fetchd, files, ftp):
    name, data = put(files, 50_000)
    fd = fetchd()
    url = f"ftp://127.0.0.1:{ftp.port}/{name}"
    job = fd.api.submit({"url": url, "destination": "auth.bin", "auth": {"username": "fetchd-e2e-pass", "password": PASSWORD}})
    done = fd.api.wait_state(job["id"], "completed")
    assert done["sha256"] == sha256_hex(data)
    assert PASSWORD not in fd.api.get(f"/downloads/{job['id']}").body.decode()
    assert "auth" not in done
    # auth on an http URL is a clear 400
    bad = fd.api.post("/downloads", {"url": "https://example.com/x", "destination": "x", "auth": {"username": "a", "password": "b"}})
    assert bad.status == 400 and "auth" in bad.body.decode()


def test_password_in_url_reads_back_masked_and_is_in_no_log_line(fetchd, files, ftp):
    name, data = put(files, 50_000)
    fd = fetchd()
    job = run(fd, ftp.url(name, password=PASSWORD))
    assert job["url"] == f"ftp://fetchd-e2e-pass:***@127.0.0.1:{ftp.port}/{name}"
    for path in [f"/downloads/{job['id']}", f"/downloads/{job['id']}/attempts", "/downloads"]:
        assert PASSWORD not in fd.api.get(path).body.decode(), path
    # A failing attempt too: its error message carries the server's reply, not the credentials.
    failed = run(fd, ftp.url("missing.bin", password=PASSWORD), expect="failed")
    assert failed["error"]["code"] == "remote_refused"
    assert PASSWORD not in fd.log_text(max_lines=100000)


def test_cut_mid_file_resumes_from_the_partial_size(fetchd, files, ftp, sftp):
    fd = fetchd(env={"FETCHD_SSH_KNOWN_HOSTS": str(sftp.known_hosts)})
    for server, url_of in [(ftp, lambda n: ftp.url(n, password=PASSWORD)),
                           (sftp, lambda n: sftp.url(files.dir / n, password=PASSWORD))]:
        name, data = put(files)
        job = fd.api.submit({"url": url_of(name), "destination": f"cut-{name}", "maxBytesPerSecond": 1024 * 1024})
        wait_for(lambda: fd.api.job(job["id"])["bytesReceived"] > 400_000, message="some bytes")
        assert server.cut_sessions() > 0
        done = fd.api.wait_state(job["id"], "completed", timeout=30)
        assert done["sha256"] == sha256_hex(data)
        tries = attempts(fd, job["id"])
        assert len(tries) >= 2, tries
        served = sum(a["bytesTransferred"] for a in tries)
        assert served <= 1.1 * len(data), (served, tries)


def test_remote_file_changed_between_attempts_restarts_from_zero(fetchd, files, ftp, sftp):
    fd = fetchd(env={"FETCHD_SSH_KNOWN_HOSTS": str(sftp.known_hosts)})
    for url_of in [lambda n: ftp.url(n, password=PASSWORD), lambda n: sftp.url(files.dir / n, password=PASSWORD)]:
        name, _ = put(files)
        job = fd.api.submit({"url": url_of(name), "destination": f"chg-{name}", "maxBytesPerSecond": 1024 * 1024})
        wait_for(lambda: fd.api.job(job["id"])["bytesReceived"] > 400_000, message="some bytes")
        assert fd.api.post(f"/downloads/{job['id']}/pause").status == 200
        fd.api.wait_state(job["id"], "paused")
        assert fd.partial_path(job["id"]).stat().st_size > 0
        changed = os.urandom(SIZE)  # same size: only the modification time tells
        files.put(name, changed, mtime=time.time() + 120)
        assert fd.api.post(f"/downloads/{job['id']}/resume").status == 200
        done = fd.api.wait_state(job["id"], "completed", timeout=30)
        assert done["sha256"] == sha256_hex(changed)
        tries = attempts(fd, job["id"])
        assert any("changed" in ((a.get("error") or {}).get("message") or "") for a in tries), tries
        assert tries[-1]["bytesTransferred"] == SIZE, tries  # the last attempt started from zero


def test_kill_9_mid_transfer_resumes(fetchd, files, sftp, ftp):
    fd = fetchd(env={"FETCHD_SSH_KNOWN_HOSTS": str(sftp.known_hosts)})
    for url_of in [lambda n: ftp.url(n, password=PASSWORD), lambda n: sftp.url(files.dir / n, password=PASSWORD)]:
        name, data = put(files)
        job = fd.api.submit({"url": url_of(name), "destination": f"k9-{name}", "maxBytesPerSecond": 1024 * 1024})
        wait_for(lambda: fd.api.job(job["id"])["bytesReceived"] > 600_000, message="some bytes")
        fd.kill()
        kept = fd.partial_path(job["id"]).stat().st_size
        fd.start()
        done = fd.api.wait_state(job["id"], "completed", timeout=30)
        assert done["sha256"] == sha256_hex(data)
        last = attempts(fd, job["id"])[-1]
        assert last["bytesTransferred"] <= len(data) - kept + 1, (kept, last)


def test_wrong_password_fails_with_login_failed_without_retries(fetchd, files, ftp, sftp):
    name, _ = put(files, 1000)
    fd = fetchd(env={"FETCHD_SSH_KNOWN_HOSTS": str(sftp.known_hosts)})
    for url in [ftp.url(name, password="wrong"), sftp.url(files.dir / name, password="wrong")]:
        job = run(fd, url, expect="failed")
        assert job["error"]["code"] == "login_failed", job
        assert job["attempts"] == 1
        assert "wrong" not in fd.api.get(f"/downloads/{job['id']}").body.decode().replace("***", "")


def test_missing_file_fails_with_remote_refused(fetchd, files, ftp, sftp):
    fd = fetchd(env={"FETCHD_SSH_KNOWN_HOSTS": str(sftp.known_hosts)})
    job = run(fd, ftp.url("no-such.bin", password=PASSWORD), expect="failed")
    assert job["error"]["code"] == "remote_refused" and "550" in job["error"]["message"], job
    assert job["attempts"] == 1
    job = run(fd, sftp.url(files.dir / "no-such.bin", password=PASSWORD), expect="failed")
    assert job["error"]["code"] == "remote_refused", job


def test_a_transient_reply_is_retried(fetchd, files, tmp_path):
    # max_per_ip=1: while the test holds a connection, vsftpd greets fetchd with 421.
    busy = Vsftpd(tmp_path / "busy", files, PASSWORD, extra=["max_per_ip=1"])
    try:
        name, data = put(files, 10_000)
        def hold():
            # The start-up probe's session may not have ended yet: until then vsftpd says 421 to us too.
            conn = socket.create_connection(("127.0.0.1", busy.port))
            if conn.recv(100).startswith(b"220"):
                return conn
            conn.close()
            return None
        held = wait_for(hold, message="vsftpd to greet the connection the test holds")
        fd = fetchd()
        job = fd.api.submit({"url": busy.url(name, password=PASSWORD), "destination": "busy.bin"})
        wait_for(lambda: any("421" in ((a.get("error") or {}).get("message") or "") for a in attempts(fd, job["id"])),
                 message=lambda: f"an attempt turned away with 421: {attempts(fd, job['id'])}")
        assert fd.api.job(job["id"])["state"] in ("queued", "running")
        held.close()
        done = fd.api.wait_state(job["id"], "completed", timeout=30)
        assert done["sha256"] == sha256_hex(data)
    finally:
        busy.stop()


def test_an_unreachable_server_is_an_outage(fetchd, files, sftp):
    # Nothing listens on these ports: the attempts do not use up FETCHD_MAX_ATTEMPTS (2 here);
    # the job fails only after FETCHD_NO_PROGRESS_TIMEOUT.
    fd = fetchd(env={"FETCHD_MAX_ATTEMPTS": "2", "FETCHD_RETRY_BASE_DELAY": "50ms", "FETCHD_NO_PROGRESS_TIMEOUT": "1s",
                     "FETCHD_SSH_KNOWN_HOSTS": str(sftp.known_hosts)})
    for url in [f"ftp://u:p@127.0.0.1:{free_port()}/f", f"sftp://u:p@127.0.0.1:{free_port()}/f"]:
        failed = run(fd, url, expect="failed")
        assert failed["error"]["code"] == "network", failed
        assert failed["attempts"] > 2, "an outage must not stop at FETCHD_MAX_ATTEMPTS"


def test_unknown_and_changed_host_keys_fail_with_host_key(fetchd, files, sftp, tmp_path):
    name, _ = put(files, 1000)
    unknown = tmp_path / "unknown_hosts"
    unknown.write_text(sftp.known_hosts_line(sftp.host_key).replace(f"]:{sftp.port} ", f"]:{sftp.port + 1} "))
    changed = tmp_path / "changed_hosts"
    changed.write_text(sftp.known_hosts_line(sftp.other_key()))
    for known in [unknown, changed]:
        fd = fetchd(env={"FETCHD_SSH_KNOWN_HOSTS": str(known)})
        job = run(fd, sftp.url(files.dir / name, password=PASSWORD), expect="failed")
        assert job["error"]["code"] == "host_key" and "FETCHD_SSH_KNOWN_HOSTS" in job["error"]["message"], job
        assert job["bytesReceived"] == 0 and job["attempts"] == 1
        assert not fd.partial_path(job["id"]).exists() or fd.partial_path(job["id"]).stat().st_size == 0
        fd.stop()


def test_sftp_without_known_hosts_is_400(fetchd, files, sftp):
    fd = fetchd()
    response = fd.api.post("/downloads", {"url": sftp.url(files.dir / "x", password=PASSWORD), "destination": "x"})
    assert response.status == 400 and "FETCHD_SSH_KNOWN_HOSTS" in response.body.decode()


def test_ftp_tls_require_against_a_plain_server_fails_with_tls(fetchd, files, ftp):
    name, _ = put(files, 1000)
    fd = fetchd(env={"FETCHD_FTP_TLS": "require"})
    job = run(fd, ftp.url(name, password=PASSWORD), expect="failed")
    assert job["error"]["code"] == "tls", job
    assert job["bytesReceived"] == 0


def test_loopback_refused_without_allow_private_networks(fetchd, files, ftp, sftp):
    name, _ = put(files, 1000)
    fd = fetchd(env={"FETCHD_ALLOW_PRIVATE_NETWORKS": "false", "FETCHD_SSH_KNOWN_HOSTS": str(sftp.known_hosts)})
    for url in [ftp.url(name, password=PASSWORD), sftp.url(files.dir / name, password=PASSWORD)]:
        job = run(fd, url, expect="failed")
        assert job["error"]["code"] == "blocked_address", job


def test_mirrors_mixing_https_and_sftp_fail_over(fetchd, files, sftp, tmp_path):
    name, data = put(files, 300_000)
    fd = fetchd(env={"FETCHD_SSH_KNOWN_HOSTS": str(sftp.known_hosts)})
    # The https:// URL has no server behind it; the sftp:// mirror has the file.
    dead = f"https://127.0.0.1:{sftp.port + 1}/{name}"
    job = run(fd, dead, mirrors=[sftp.url(files.dir / name, password=PASSWORD)])
    assert job["sha256"] == sha256_hex(data)
    # And the other way round: a missing file on the sftp:// server, the https:// mirror has it.
    certs = Certificates.make(tmp_path / "certs")
    origin = NginxOrigin(tmp_path, certs)
    origin.add("m.bin", data)
    origin.start()
    try:
        fd2 = fetchd(env={"FETCHD_SSH_KNOWN_HOSTS": str(sftp.known_hosts), "FETCHD_CA_BUNDLE": str(certs.ca)})
        job = run(fd2, sftp.url(files.dir / "gone.bin", password=PASSWORD), mirrors=[origin.https_url("m.bin")])
        assert job["sha256"] == sha256_hex(data)
    finally:
        origin.stop()


def test_a_pasv_answer_naming_another_host_changes_nothing(fetchd):
    # Only loopback is allowed: had fetchd followed the PASV answer to 10.0.0.99, the policy
    # would have refused it (blocked_address). It connects to the control connection's address.
    data = os.urandom(100_000)
    server = MisdirectingFTP(data, pasv_host="10.0.0.99")
    try:
        fd = fetchd(env={"FETCHD_ALLOW_PRIVATE_NETWORKS": "false", "FETCHD_ALLOW_NETWORKS": "127.0.0.1/32"})
        job = run(fd, f"ftp://u:p@127.0.0.1:{server.port}/file.bin")
        assert job["sha256"] == sha256_hex(data)
        assert "PASV" in server.commands, server.commands
    finally:
        server.stop()


def test_a_watch_fetches_an_unchanged_remote_file_once(fetchd, files, ftp, sftp):
    """A watch's check of an ftp:// or sftp:// URL takes the remote size and modification time
    for validators: while they stay, the file is not fetched again nor replaced; a new file is."""
    fd = fetchd(env={"FETCHD_SSH_KNOWN_HOSTS": str(sftp.known_hosts), "FETCHD_FTP_TLS": "never",
                     "FETCHD_WATCH_MIN_INTERVAL": "200ms"})
    for scheme, url_of in [("ftp", lambda n: ftp.url(n, password=PASSWORD)),
                           ("sftp", lambda n: sftp.url(files.dir / n, password=PASSWORD))]:
        name, first = put(files)
        response = fd.api.post("/watches", {"url": url_of(name), "destination": f"watched-{name}", "interval": "300ms"})
        assert response.status == 201, response.body
        watch_id = response.json()["id"]

        def watch(checks: int) -> dict:
            return wait_for(lambda: (w := fd.api.get(f"/watches/{watch_id}").json())["checks"] >= checks and w,
                            message=f"{checks} checks of the {scheme} watch")

        placed = fd.dest(f"watched-{name}")
        watch(1)
        inode = placed.stat().st_ino
        now = watch(4)
        assert (now["lastResult"], now["changes"]) == ("unchanged", 1), (scheme, now)
        assert now["etag"] == f"size={SIZE}; mtime={int(os.stat(files.dir / name).st_mtime)}", now
        assert placed.stat().st_ino == inode and placed.read_bytes() == first
        if scheme == "ftp":
            # Each check asked the server; only the first took the file (see docs/watches.md
            # for what an FTP server pushes before an unchanged check closes the connection).
            log = (ftp.workdir / "transfers.log").read_text()
            assert sum(f'/{name}", ' in line for line in log.splitlines()) >= 4, log

        second = os.urandom(SIZE)  # the same size: the modification time tells
        files.put(name, second, mtime=time.time() + 120)
        wait_for(lambda: fd.api.get(f"/watches/{watch_id}").json()["changes"] == 2, message=f"the {scheme} change")
        assert placed.read_bytes() == second
        assert fd.api.delete(f"/watches/{watch_id}").status == 200


# --------------------------------------------------------------------------- uploads


def upload_source(fd, size: int = SIZE) -> tuple[str, bytes]:
    """A file of `size` random bytes under fetchd's upload root; its name, also the remote name."""
    name = f"u-{secrets.token_hex(4)}.bin"
    data = os.urandom(size)
    fd.uploads.mkdir(parents=True, exist_ok=True)
    (fd.uploads / name).write_bytes(data)
    return name, data


def upload(fd, url: str, source: str, **extra) -> dict:
    response = fd.api.post("/uploads", {"url": url, "source": source, **extra})
    assert response.status == 201, response
    return response.json()


def upload_state(fd, upload_id: str, state: str, timeout: float = 30) -> dict:
    last: dict = {}

    def check():
        nonlocal last
        last = fd.api.get(f"/uploads/{upload_id}").json()
        if last["state"] in ("completed", "failed", "cancelled") and last["state"] != state:
            raise AssertionError(f"upload reached {last['state']} instead of {state}: {last}")
        return last if last["state"] == state else None
    return wait_for(check, timeout=timeout, interval=0.05, message=lambda: f"upload {upload_id} to be {state}: {last}")


def upload_attempts(fd, upload_id: str) -> list[dict]:
    return fd.api.get(f"/uploads/{upload_id}/attempts").json()["items"]


def upload_under_way(fd, url_of, sent: int) -> tuple[str, bytes, dict]:
    """A 3 MiB upload at 1 MiB/s to `url_of(name)`, once the Upload says `sent` bytes went:
    the source's name, its bytes and the job."""
    name, data = upload_source(fd)
    job = upload(fd, url_of(name), name, maxBytesPerSecond=1024 * 1024)
    wait_for(lambda: fd.api.get(f"/uploads/{job['id']}").json()["bytesSent"] > sent, message=f"{sent} bytes sent")
    return name, data, job


def uploaded_targets(files, ftp, sftp):
    """For each of plain FTP and SFTP: the server, the URL of a remote name under incoming/, and
    the bytes the server logged as received for it."""
    return [(ftp, lambda r: ftp.url(f"incoming/{r}", password=PASSWORD), lambda r: ftp.uploaded_bytes(r)),
            (sftp, lambda r: sftp.url(files.incoming / r, password=PASSWORD), lambda r: sftp.uploaded_bytes(files.incoming / r))]


def test_upload_over_each_scheme_puts_the_file_with_its_digest(fetchd, files, ftp, ftps, sftp):
    fd = fetchd(env={"FETCHD_SSH_KNOWN_HOSTS": str(sftp.known_hosts), "FETCHD_SSH_KEY": str(sftp.client_key),
                     "FETCHD_CA_BUNDLE": str(ftps.certificate)})
    targets = [lambda r: ftp.url(f"incoming/{r}", password=PASSWORD),
               lambda r: ftps.url(f"incoming/{r}", password=PASSWORD),  # AUTH TLS: the server insists
               lambda r: sftp.url(files.incoming / r, password=PASSWORD),
               lambda r: sftp.url(files.incoming / r, user=KEY_USER)]
    for url_of in targets:
        name, data = upload_source(fd, 300_000)
        done = upload_state(fd, upload(fd, url_of(name), name)["id"], "completed")
        assert (files.incoming / name).read_bytes() == data, url_of(name)
        assert done["sha256"] == sha256_hex(data) and done["bytesSent"] == len(data)
        assert done["attempts"] == 1, upload_attempts(fd, done["id"])


def test_upload_auth_field_logs_in_and_credentials_stay_out_of_sight(fetchd, files, ftp):
    fd = fetchd()
    name, data = upload_source(fd, 50_000)
    job = upload(fd, f"ftp://127.0.0.1:{ftp.port}/incoming/{name}", name,
                 auth={"username": "fetchd-e2e-pass", "password": PASSWORD})
    assert upload_state(fd, job["id"], "completed")["sha256"] == sha256_hex(data)
    assert (files.incoming / name).read_bytes() == data
    other, _ = upload_source(fd, 1000)
    job = upload(fd, ftp.url(f"incoming/{other}", password=PASSWORD), other)
    assert job["url"] == f"ftp://fetchd-e2e-pass:***@127.0.0.1:{ftp.port}/incoming/{other}"
    upload_state(fd, job["id"], "completed")
    for path in [f"/uploads/{job['id']}", f"/uploads/{job['id']}/attempts", "/uploads"]:
        assert PASSWORD not in fd.api.get(path).body.decode(), path
    assert PASSWORD not in fd.log_text(max_lines=100000)
    # A file server stores the file: POST is an HTTP method only.
    refused = fd.api.post("/uploads", {"url": ftp.url("incoming/x", password=PASSWORD), "source": name, "method": "POST"})
    assert refused.status == 400 and "method" in refused.body.decode()


def test_an_upload_cut_mid_file_appends_at_the_servers_size(fetchd, files, ftp, sftp):
    fd = fetchd(env={"FETCHD_SSH_KNOWN_HOSTS": str(sftp.known_hosts)})
    for server, url_of, received in uploaded_targets(files, ftp, sftp):
        name, data, job = upload_under_way(fd, url_of, 400_000)
        assert server.cut_sessions() > 0
        kept = (files.incoming / name).stat().st_size  # the killed session logs nothing
        assert kept > 0
        done = upload_state(fd, job["id"], "completed")
        assert (files.incoming / name).read_bytes() == data
        assert done["sha256"] == sha256_hex(data)
        assert len(upload_attempts(fd, job["id"])) >= 2
        assert kept + received(name) <= 1.1 * len(data), (kept, received(name))


def test_kill_9_mid_upload_resumes(fetchd, files, ftp, sftp):
    fd = fetchd(env={"FETCHD_SSH_KNOWN_HOSTS": str(sftp.known_hosts)})
    for server, url_of, received in uploaded_targets(files, ftp, sftp):
        # Past the first saved progress: the restarted fetchd knows it sent bytes, so it appends.
        name, data, job = upload_under_way(fd, url_of, 1_200_000)
        fd.kill()
        wait_for(lambda: server.sessions() == [], message="the server to see the connection gone")
        fd.start()
        done = upload_state(fd, job["id"], "completed")
        assert (files.incoming / name).read_bytes() == data
        assert done["sha256"] == sha256_hex(data)
        assert received(name) <= 1.1 * len(data), received(name)


def test_an_upload_whose_server_file_grew_longer_starts_over(fetchd, files, ftp, sftp):
    fd = fetchd(env={"FETCHD_SSH_KNOWN_HOSTS": str(sftp.known_hosts)})
    for _, url_of, _ in uploaded_targets(files, ftp, sftp):
        name, data, job = upload_under_way(fd, url_of, 400_000)
        assert fd.api.post(f"/uploads/{job['id']}/pause").status == 200
        upload_state(fd, job["id"], "paused")
        # Someone else's file now: longer than the source, so not a part of it.
        other = files.incoming / name
        other.write_bytes(os.urandom(SIZE + 1000))
        os.chmod(other, 0o666)
        assert fd.api.post(f"/uploads/{job['id']}/resume").status == 200
        done = upload_state(fd, job["id"], "completed")
        assert (files.incoming / name).read_bytes() == data
        assert done["sha256"] == sha256_hex(data)
        messages = [(a.get("error") or {}).get("message") or "" for a in upload_attempts(fd, job["id"])]
        assert any("longer than the source" in m for m in messages), messages


def test_upload_failures_are_classed_as_downloads(fetchd, files, ftp, sftp, tmp_path):
    fd = fetchd(env={"FETCHD_SSH_KNOWN_HOSTS": str(sftp.known_hosts)})
    name, _ = upload_source(fd, 1000)
    for url in [ftp.url(f"incoming/{name}", password="wrong"), sftp.url(files.incoming / name, password="wrong")]:
        failed = upload_state(fd, upload(fd, url, name)["id"], "failed")
        assert failed["error"]["code"] == "login_failed" and failed["attempts"] == 1, failed
    for url in [ftp.url(f"no-such-dir/{name}", password=PASSWORD), sftp.url(files.dir / "no-such-dir" / name, password=PASSWORD)]:
        failed = upload_state(fd, upload(fd, url, name)["id"], "failed")
        assert failed["error"]["code"] == "remote_refused" and failed["attempts"] == 1, failed
    assert not (files.incoming / name).exists()
    fd.stop()

    unknown = tmp_path / "unknown_hosts"
    unknown.write_text(sftp.known_hosts_line(sftp.other_key()))
    for env, url, code in [({"FETCHD_SSH_KNOWN_HOSTS": str(unknown)}, sftp.url(files.incoming / name, password=PASSWORD), "host_key"),
                           ({"FETCHD_FTP_TLS": "require"}, ftp.url(f"incoming/{name}", password=PASSWORD), "tls"),
                           ({"FETCHD_ALLOW_PRIVATE_NETWORKS": "false"}, ftp.url(f"incoming/{name}", password=PASSWORD), "blocked_address")]:
        fd = fetchd(env=env)
        upload_source(fd, 1000)
        (fd.uploads / name).write_bytes(b"x" * 1000)
        failed = upload_state(fd, upload(fd, url, name)["id"], "failed")
        assert failed["error"]["code"] == code and failed["bytesSent"] == 0, failed
        assert not (files.incoming / name).exists(), code
        fd.stop()
    # Without known hosts an sftp:// upload could only fail: refused at submit.
    fd = fetchd()
    (fd.uploads).mkdir(parents=True, exist_ok=True)
    (fd.uploads / name).write_bytes(b"x")
    response = fd.api.post("/uploads", {"url": sftp.url(files.incoming / name, password=PASSWORD), "source": name})
    assert response.status == 400 and "FETCHD_SSH_KNOWN_HOSTS" in response.body.decode()
