#!/usr/bin/env python3
"""make package-check: the .deb as an operator meets it (needs root).

1. lintian: no error; each warning one that docs/operations.md explains (EXPLAINED below).
2. Installed with apt into an overlay over the Debian root `make container-check` caches
   (.build-container/rootfs; the cache itself is not changed): the files, the fetchd user, its
   directories, the conffile; `systemd-analyze verify` of the units there; installing it again
   over itself (the upgrade path) keeps an edited fetchd.env.
3. The unit's ExecStart run there, as its User and Group, with its Environment= and
   EnvironmentFile= (plus FETCHD_ALLOW_PRIVATE_NETWORKS=true for the loopback test origin), with
   no new privileges and no capabilities (setpriv), on a listening socket passed as fetchd.socket
   passes it (LISTEN_FDS) and a notification socket as Type=notify passes it: READY=1 arrives from fetchd's pid, a download completes into the
   download root and belongs to the user; SIGTERM ends it with exit 0; nothing outside
   ReadWritePaths= was written.

    scripts/package/check.py [DEB]      (default: the newest .build-package/fetchd_*.deb)

What it cannot show here: systemd as PID 1 starting the units, the sandboxing applied."""

import configparser
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTFS = REPO / ".build-container" / "rootfs"
WORK = REPO / ".build-package" / "check"
MNT = WORK / "root"
# lintian warnings that are deliberate; docs/operations.md says why.
EXPLAINED = {
    "non-standard-file-perm 0640 != 0644 [etc/fetchd/fetchd.env]",
}

results = {"passed": 0, "failed": 0}


def report(ok: bool, name: str, detail: str = "") -> bool:
    print(f"{'PASS' if ok else 'FAIL'}  {name}")
    if detail and not ok:
        print("\n".join("      " + line for line in detail.strip().splitlines()[-20:]))
    results["passed" if ok else "failed"] += 1
    return ok


def run(*command: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, **kw)
    if check and result.returncode != 0:
        raise SystemExit(f"package-check: {' '.join(command)} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return result


def in_root(*command: str, check: bool = True) -> subprocess.CompletedProcess:
    return run("chroot", str(MNT), *command, check=check,
               env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND": "noninteractive", "LANG": "C.UTF-8"})


def mounts_below(path: Path) -> list[str]:
    targets = run("findmnt", "-rn", "-o", "TARGET").stdout.splitlines()
    return sorted((t for t in targets if t == str(path) or t.startswith(f"{path}/")), reverse=True)


def unmount_all() -> None:
    for target in mounts_below(WORK):
        if run("umount", target, check=False).returncode != 0:
            run("umount", "-l", target, check=False)


def lintian(deb: Path) -> None:
    output = run("lintian", "--pedantic", "--no-tag-display-limit", str(deb), check=False).stdout
    tags = [line for line in output.splitlines() if line[:2] in ("E:", "W:", "I:", "P:")]
    errors = [tag for tag in tags if tag.startswith("E:")]
    report(not errors, "lintian: no errors", "\n".join(errors))
    unexplained = [tag for tag in tags if tag.startswith("W:") and tag.split(": ", 2)[2] not in EXPLAINED]
    report(not unexplained, f"lintian: every warning explained ({len(tags) - len(errors)} tags)", "\n".join(unexplained))
    print("\n".join("      " + tag for tag in tags))


def install(deb: Path) -> None:
    unmount_all()
    shutil.rmtree(WORK, ignore_errors=True)
    for part in ("upper", "work", "root"):
        (WORK / part).mkdir(parents=True)
    run("mount", "-t", "overlay", "overlay", "-o",
        f"lowerdir={ROOTFS},upperdir={WORK / 'upper'},workdir={WORK / 'work'}", str(MNT))
    run("mount", "-t", "proc", "proc", str(MNT / "proc"))
    run("mount", "--rbind", "/dev", str(MNT / "dev"))
    run("mount", "--make-rslave", str(MNT / "dev"))
    shutil.copy("/etc/resolv.conf", MNT / "etc" / "resolv.conf")
    shutil.copy(deb, MNT / "tmp" / deb.name)
    # The container's image has its own fetchd user (uid 10001); the package must make its own.
    if in_root("getent", "passwd", "fetchd", check=False).returncode == 0:
        in_root("userdel", "fetchd")
    if in_root("getent", "group", "fetchd", check=False).returncode == 0:
        in_root("groupdel", "fetchd")
    in_root("apt-get", "update", "-qq")
    result = in_root("apt-get", "install", "-y", "-qq", "--no-install-recommends", f"/tmp/{deb.name}", check=False)
    report(result.returncode == 0, f"apt-get install ./{deb.name} in the Debian root", result.stdout + result.stderr)


def check_installed() -> None:
    listed = set(in_root("dpkg", "-L", "fetchd").stdout.split())
    wanted = {"/usr/bin/fetchd", "/lib/systemd/system/fetchd.service", "/lib/systemd/system/fetchd.socket",
              "/usr/lib/sysusers.d/fetchd.conf", "/usr/lib/tmpfiles.d/fetchd.conf", "/etc/fetchd/fetchd.env",
              "/usr/share/man/man8/fetchd.8.gz", "/usr/libexec/fetchd/swift-backtrace-static"}
    report(wanted <= listed, "dpkg -L fetchd: binary, units, sysusers.d, tmpfiles.d, env file, man page",
           "missing: " + " ".join(sorted(wanted - listed)))
    user = in_root("getent", "passwd", "fetchd", check=False).stdout.strip().split(":")
    report(len(user) == 7 and int(user[2]) < 1000 and user[5:] == ["/var/lib/fetchd", "/usr/sbin/nologin"],
           f"the fetchd system user: {':'.join(user)}")
    for directory in ("/var/lib/fetchd", "/srv/fetchd", "/srv/fetchd/.fetchd-partial"):
        stat = in_root("stat", "-c", "%U:%G %a", directory, check=False).stdout.strip()
        report(stat == "fetchd:fetchd 750", f"{directory}: {stat or 'missing'}")
    conffiles = in_root("dpkg-query", "-W", "-f=${Conffiles}", "fetchd").stdout
    stat = in_root("stat", "-c", "%U:%G %a", "/etc/fetchd/fetchd.env").stdout.strip()
    report("/etc/fetchd/fetchd.env" in conffiles and stat == "root:root 640",
           f"/etc/fetchd/fetchd.env is a conffile, {stat}", conffiles)
    verify = in_root("systemd-analyze", "verify", "--man=no", "fetchd.service", "fetchd.socket", check=False)
    report(verify.returncode == 0 and not (verify.stdout + verify.stderr).strip(),
           "systemd-analyze verify fetchd.service fetchd.socket in the root", verify.stdout + verify.stderr)


def check_upgrade(deb: Path) -> None:
    """Installing over an installed fetchd (the upgrade path of the maintainer scripts) keeps an
    edited fetchd.env."""
    env_file = MNT / "etc/fetchd/fetchd.env"
    edited = env_file.read_text() + "FETCHD_MAX_TRANSFERS=4\n"
    env_file.write_text(edited)
    result = in_root("dpkg", "-i", f"/tmp/{deb.name}", check=False)
    report(result.returncode == 0 and env_file.read_text() == edited,
           "dpkg -i over the installed package: succeeds and keeps the edited fetchd.env", result.stdout + result.stderr)


def unit_service() -> configparser.SectionProxy:
    """The [Service] section of the installed unit."""
    unit = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    unit.optionxform = str
    unit.read_string((MNT / "lib/systemd/system/fetchd.service").read_text())
    return unit["Service"]


def unit_environment(service: configparser.SectionProxy) -> dict[str, str]:
    """Environment= and EnvironmentFile= of the unit, on systemd's own PATH."""
    environment = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
    for assignment in service.get("Environment", "").split():
        name, value = assignment.split("=", 1)
        environment[name] = value
    for line in (MNT / service["EnvironmentFile"].lstrip("/")).read_text().splitlines():
        if line and not line.startswith("#"):
            name, value = line.split("=", 1)
            environment[name] = value
    return environment


def written_outside(allowed: list[str], since: float) -> list[str]:
    """What changed in the root since `since` outside `allowed` (and their parents)."""
    upper = WORK / "upper"
    found = []
    for path in upper.rglob("*"):
        name = "/" + str(path.relative_to(upper))
        if path.lstat().st_mtime < since or any(name == a or name.startswith(a + "/") or a.startswith(name + "/") for a in allowed):
            continue
        found.append(name)
    return found


def wait_for(predicate, seconds: float):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    return None


def request(url: str, body: dict | None = None) -> dict | None:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if body is not None else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=5) as response:
            return json.loads(response.read() or b"{}")
    except (OSError, ValueError):
        return None


def run_exec_start() -> None:
    service = unit_service()
    command, user, group = service["ExecStart"].split(), service["User"], service["Group"]
    environment = unit_environment(service)
    environment["FETCHD_ALLOW_PRIVATE_NETWORKS"] = "true"
    origin_dir = WORK / "origin"
    origin_dir.mkdir()
    payload = os.urandom(3 * 1024 * 1024)
    (origin_dir / "sample.bin").write_bytes(payload)
    origin = subprocess.Popen([sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", str(origin_dir)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    port = listener.getsockname()[1]
    # The service manager's notification socket, as Type=notify has it: an abstract name, which
    # the chroot reaches as well (same network namespace).
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(f"\0fetchd-package-check-{os.getpid()}")
    notify.settimeout(60)
    environment["NOTIFY_SOCKET"] = f"@fetchd-package-check-{os.getpid()}"
    log = open(WORK / "fetchd.log", "w")
    # As fetchd.socket hands it over: descriptor 3, LISTEN_FDS=1, LISTEN_PID fetchd's own.
    exec_start = " ".join(command)
    # NoNewPrivileges= and the empty CapabilityBoundingSet= as setpriv gives them; the rest of the
    # sandbox needs systemd. What it writes is compared with ReadWritePaths= afterwards.
    started = time.time()
    fetchd = subprocess.Popen(
        ["chroot", str(MNT), "setpriv", f"--reuid={user}", f"--regid={group}", "--init-groups", "--no-new-privs",
         "--bounding-set=-all", "--inh-caps=-all",
         "/usr/bin/env", "-i", *[f"{k}={v}" for k, v in environment.items()],
         "LISTEN_FDS=1", "/bin/sh", "-c", f'LISTEN_PID=$$ exec {exec_start} 3<&{listener.fileno()}'],
        pass_fds=(listener.fileno(),), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    listener.close()
    try:
        origin_port = int(wait_for(lambda: origin.stdout.readline().split("port ")[1].split()[0], 10) or 0)
        base = f"http://127.0.0.1:{port}"
        try:
            message = dict(line.split("=", 1) for line in notify.recv(4096).decode().splitlines())
        except (OSError, ValueError):
            message = {}
        ready = (request(f"{base}/readyz") or {}).get("status") == "ready"
        if not report(message.get("READY") == "1" and message.get("MAINPID") == str(fetchd.pid) and ready,
                      f"{exec_start} as {user}:{group}: READY=1 ({message.get('STATUS')}), then /readyz 200 on the passed socket",
                      f"{message}\n" + (WORK / "fetchd.log").read_text()):
            return
        uids = [line.split()[1:] for line in Path(f"/proc/{fetchd.pid}/status").read_text().splitlines() if line.startswith("Uid:")][0]
        expected = in_root("id", "-u", user).stdout.strip()
        report(set(uids) == {expected}, f"runs as uid {expected} (real, effective, saved, fs: {' '.join(uids)})")
        job = request(f"{base}/downloads", {"url": f"http://127.0.0.1:{origin_port}/sample.bin", "destination": "check/sample.bin"})
        final = wait_for(lambda: (lambda j: j if j and j.get("state") in ("completed", "failed", "cancelled") else None)(
            request(f"{base}/downloads/{job['id']}")), 60) if job else None
        placed = MNT / "srv/fetchd/check/sample.bin"
        digest = hashlib.sha256(payload).hexdigest()
        report(bool(final) and final["state"] == "completed" and placed.is_file()
               and hashlib.sha256(placed.read_bytes()).hexdigest() == digest,
               f"a download completes into /srv/fetchd/check/sample.bin (sha256 {digest[:16]}…)",
               json.dumps(final) + "\n" + (WORK / "fetchd.log").read_text())
        owner = in_root("stat", "-c", "%U", "/srv/fetchd/check/sample.bin", check=False).stdout.strip()
        report(owner == user, f"the file belongs to {owner or '?'}")
        fetchd.terminate()
        code = fetchd.wait(timeout=30)
        report(code == 0, f"SIGTERM: exit {code}")
        # PrivateTmp= gives it a /tmp and /var/tmp of its own.
        allowed = service["ReadWritePaths"].split() + ["/tmp", "/var/tmp"]
        outside = written_outside(allowed, started)
        report(not outside, f"wrote only under ReadWritePaths= ({' '.join(allowed[:-2])})", "\n".join(outside[:20]))
    finally:
        for process in (fetchd, origin):
            if process.poll() is None:
                process.kill()
                process.wait()
        log.close()
        notify.close()


def main() -> int:
    if os.geteuid() != 0:
        raise SystemExit("package-check: needs root (overlay mount, chroot): sudo make package-check")
    debs = sys.argv[1:] or sorted(map(str, (REPO / ".build-package").glob("fetchd_*.deb")), key=os.path.getmtime)[-1:]
    if not debs:
        raise SystemExit("package-check: no .deb: run make package")
    if not (ROOTFS / "usr/bin/apt-get").exists():
        raise SystemExit(f"package-check: no Debian root at {ROOTFS}: run make container-check once")
    deb = Path(debs[0]).resolve()
    print(f"==> {deb.name}")
    lintian(deb)
    try:
        install(deb)
        check_installed()
        check_upgrade(deb)
        run_exec_start()
    finally:
        unmount_all()
    print(f"\npackage-check: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
