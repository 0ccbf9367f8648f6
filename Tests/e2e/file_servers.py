"""Real file servers on loopback for the FTP, FTPS and SFTP tests: Debian's vsftpd (plain FTP,
or explicit FTPS with a certificate made for the run by openssl; passive ports on loopback)
and OpenSSH's sshd (SFTP only, its own host key and config). Both log in system accounts, so
the tests make two (a password user, and a key-only user for SFTP) and must run as root, as
the PostgreSQL tests start their server as a system user too."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

from e2e_support import wait_for

PASSWORD_USER = "fetchd-e2e-pass"
KEY_USER = "fetchd-e2e-key"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def ensure_user(name: str, password: str | None) -> None:
    """A system account with a shell in /etc/shells (vsftpd's PAM asks); `password` None: no
    password login at all, but not locked either (sshd refuses locked accounts even a key)."""
    if subprocess.run(["id", name], capture_output=True).returncode != 0:
        # vsftpd enters the home directory before local_root: one that exists.
        subprocess.run(["useradd", "--no-create-home", "--home-dir", "/", "--shell", "/bin/sh", name], check=True)
    if password is None:
        subprocess.run(["usermod", "-p", "*", name], check=True)
    else:
        subprocess.run(["chpasswd"], input=f"{name}:{password}\n", text=True, check=True)


class Files:
    """A directory every server user may read, for the files served, with `incoming/` in it
    that every server user may write, for uploads."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="fetchd-e2e-files-"))
        os.chmod(self.dir, 0o755)
        self.incoming = self.dir / "incoming"
        self.incoming.mkdir()
        os.chmod(self.incoming, 0o777)

    def put(self, name: str, data: bytes, mtime: float | None = None) -> Path:
        path = self.dir / name
        path.write_bytes(data)
        os.chmod(path, 0o644)
        if mtime is not None:
            os.utime(path, (mtime, mtime))
        return path

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


class _Server:
    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.log = workdir / "server.log"

    def _start(self, argv: list[str]) -> None:
        # vsftpd reports a bad config on file descriptor 0, so that goes to the log too.
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(argv, stdin=log, stdout=log, stderr=subprocess.STDOUT)
        wait_for(lambda: self.proc.poll() is not None or _port_open(self.port), timeout=15,
                 message=lambda: f"{argv[0]} to listen on {self.port}: {self.log.read_text(errors='replace')}")
        assert self.proc.poll() is None, self.log.read_text(errors="replace")

    def sessions(self) -> list[int]:
        """The per-connection processes under the listening one."""
        assert self.proc is not None
        found, frontier = [], [self.proc.pid]
        while frontier:
            out = subprocess.run(["pgrep", "-P", str(frontier.pop())], capture_output=True, text=True).stdout
            children = [int(p) for p in out.split()]
            found += children
            frontier += children
        return found

    def cut_sessions(self) -> int:
        """SIGKILL every connection's process: the transfer stops mid-file, as a crash would."""
        pids = self.sessions()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return len(pids)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.cut_sessions()
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(getattr(self, "keys", self.workdir / "none"), ignore_errors=True)


class Vsftpd(_Server):
    """vsftpd on a loopback port; `tls`: explicit FTPS (AUTH TLS) with a fresh self-signed
    certificate (`certificate` is its PEM, for FETCHD_CA_BUNDLE)."""

    def __init__(self, workdir: Path, files: Files, password: str, tls: bool = False, max_rate: int = 0,
                 extra: list[str] | None = None):
        super().__init__(workdir)
        self.certificate = workdir / "cert.pem"
        ensure_user(PASSWORD_USER, password)
        # A range, not one port: a data connection's port may still be held by the last one.
        low = min(free_port(), 65535 - 32)
        lines = [
            "listen=YES", "listen_ipv6=NO", "listen_address=127.0.0.1", f"listen_port={self.port}",
            "background=NO", "anonymous_enable=NO", "local_enable=YES", "write_enable=YES",
            f"local_root={files.dir}", "pasv_enable=YES", "pasv_address=127.0.0.1",
            f"pasv_min_port={low}", f"pasv_max_port={low + 32}", "pasv_promiscuous=NO",
            "seccomp_sandbox=NO", "secure_chroot_dir=/var/run/vsftpd/empty", "pam_service_name=vsftpd",
            "xferlog_enable=YES", "xferlog_std_format=NO", f"vsftpd_log_file={workdir / 'transfers.log'}",
            f"local_max_rate={max_rate}", "use_localtime=NO", "mdtm_write=NO",
        ]
        if tls:
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                            "-keyout", str(workdir / "key.pem"), "-out", str(self.certificate)],
                           check=True, capture_output=True)
            lines += ["ssl_enable=YES", f"rsa_cert_file={self.certificate}", f"rsa_private_key_file={workdir / 'key.pem'}",
                      "force_local_logins_ssl=YES", "force_local_data_ssl=YES", "require_ssl_reuse=NO"]
        config = workdir / "vsftpd.conf"
        config.write_text("\n".join(lines + list(extra or [])) + "\n")
        os.chmod(config, 0o600)
        self._start(["/usr/sbin/vsftpd", str(config)])

    def url(self, name: str, user: str = PASSWORD_USER, password: str | None = None, scheme: str = "ftp") -> str:
        auth = f"{user}:{password}@" if password is not None else f"{user}@"
        return f"{scheme}://{auth}127.0.0.1:{self.port}/{name}"

    def uploaded_bytes(self, name: str) -> int:
        """Bytes vsftpd logged as received for uploads of files called `name` (each ended session's
        count; a session killed mid-file logs nothing)."""
        log = self.workdir / "transfers.log"
        lines = log.read_text(errors="replace").splitlines() if log.exists() else []
        return sum(int(line.split(f'/{name}", ')[1].split(" bytes")[0]) for line in lines
                   if "UPLOAD:" in line and f'/{name}", ' in line)


class Sshd(_Server):
    """sshd on a loopback port with its own ed25519 host key, SFTP only (internal-sftp), for a
    password user and a key-only user. `known_hosts` trusts its key; `client_key` logs the key
    user in."""

    def __init__(self, workdir: Path, password: str):
        super().__init__(workdir)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        ensure_user(PASSWORD_USER, password)
        ensure_user(KEY_USER, None)
        self.host_key = workdir / "host_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.host_key)], check=True)
        # ECDSA in PEM: libssh2 1.10 signs RSA keys only with ssh-rsa (SHA-1), which OpenSSH 9
        # refuses, and reads PEM whatever crypto backend it was built with.
        self.client_key = workdir / "client_ecdsa"
        subprocess.run(["ssh-keygen", "-q", "-t", "ecdsa", "-b", "256", "-m", "PEM", "-N", "", "-f", str(self.client_key)],
                       check=True)
        # sshd reads a user's authorized keys as that user: a directory anyone may enter.
        keys = Path(tempfile.mkdtemp(prefix="fetchd-e2e-keys-"))
        os.chmod(keys, 0o755)
        self.keys = keys
        (keys / KEY_USER).write_text((workdir / "client_ecdsa.pub").read_text())
        os.chmod(keys / KEY_USER, 0o644)
        self.known_hosts = workdir / "known_hosts"
        self.known_hosts.write_text(self.known_hosts_line(self.host_key))
        config = workdir / "sshd_config"
        config.write_text("\n".join([
            f"Port {self.port}", "ListenAddress 127.0.0.1", f"HostKey {self.host_key}", "PidFile none",
            "UsePAM no", "PasswordAuthentication yes", "KbdInteractiveAuthentication no", "PubkeyAuthentication yes",
            f"AuthorizedKeysFile {keys}/%u", "StrictModes no", f"AllowUsers {PASSWORD_USER} {KEY_USER}",
            # -l INFO: each file's close is logged with the bytes written (`uploaded_bytes`).
            "Subsystem sftp internal-sftp -l INFO", "ForceCommand internal-sftp -l INFO", "AllowTcpForwarding no",
            "X11Forwarding no", "PermitTTY no", "LogLevel VERBOSE", "MaxStartups 100",
        ]) + "\n")
        self._start(["/usr/sbin/sshd", "-D", "-e", "-f", str(config)])

    def known_hosts_line(self, key: Path) -> str:
        kind, blob = Path(str(key) + ".pub").read_text().split()[:2]
        return f"[127.0.0.1]:{self.port} {kind} {blob}\n"

    def other_key(self) -> Path:
        """A second ed25519 key, for a known_hosts entry that does not match."""
        other = self.workdir / f"other_{secrets.token_hex(4)}"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
        return other

    def url(self, path: Path, user: str = PASSWORD_USER, password: str | None = None) -> str:
        auth = f"{user}:{password}@" if password is not None else f"{user}@"
        return f"sftp://{auth}127.0.0.1:{self.port}{path}"

    def uploaded_bytes(self, path: Path) -> int:
        """Bytes the SFTP server logged as written to `path` (at each close; a session killed
        mid-file logs nothing)."""
        lines = self.log.read_text(errors="replace").splitlines()
        return sum(int(line.split(" written ")[1].split()[0]) for line in lines
                   if f'close "{path}"' in line and " written " in line)


class MisdirectingFTP:
    """An FTP server that answers `EPSV` with 500 and `PASV` with an address other than its
    own (`pasv_host`), while its data listener is on 127.0.0.1: what a server pointing a client
    at another host looks like. It serves one file, `data`, at any path."""

    def __init__(self, data: bytes, pasv_host: str):
        self.data = data
        self.pasv_host = pasv_host
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.commands: list[str] = []
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self.listener.settimeout(0.2)
        while not self._stop:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            threading.Thread(target=self._session, args=(conn,), daemon=True).start()

    def _session(self, conn: socket.socket) -> None:
        data_listener = socket.create_server(("127.0.0.1", 0))
        reader = conn.makefile("rb")

        def say(line: str) -> None:
            conn.sendall(line.encode() + b"\r\n")

        say("220 misdirecting")
        with conn, data_listener:
            for raw in reader:
                line = raw.decode(errors="replace").strip()
                verb = line.split(" ")[0].upper()
                self.commands.append(verb)
                if verb == "USER":
                    say("331 password")
                elif verb == "PASS":
                    say("230 in")
                elif verb == "PWD":
                    say('257 "/"')
                elif verb == "PASV":
                    port = data_listener.getsockname()[1]
                    say(f"227 Entering Passive Mode ({self.pasv_host.replace('.', ',')},{port >> 8},{port & 255})")
                elif verb in ("TYPE", "CWD"):
                    say("200 ok")
                elif verb == "SIZE":
                    say(f"213 {len(self.data)}")
                elif verb == "MDTM":
                    say("213 20240101000000")
                elif verb == "RETR":
                    data_listener.settimeout(5)
                    try:
                        channel, _ = data_listener.accept()
                    except OSError:
                        say("425 no data connection")
                        continue
                    say(f"150 sending ({len(self.data)} bytes)")
                    with channel:
                        channel.sendall(self.data)
                    say("226 done")
                elif verb == "QUIT":
                    say("221 bye")
                    return
                else:  # EPSV, AUTH and anything else
                    say("500 not understood")

    def stop(self) -> None:
        self._stop = True
        self._thread.join()
        self.listener.close()
