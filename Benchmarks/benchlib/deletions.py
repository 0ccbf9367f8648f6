"""Waiting until the disk has forgotten files removed in bulk, before timing the creation of files.

On ext4 without a journal (this machine's root) a new inode is not given a number freed in the last
60 s, or the last 360 s while its inode table block is dirty (`recently_deleted` in
fs/ext4/ialloc.c) — and creating files nearby keeps it dirty — and every creation walks past all
of them: after a run's work directory (12,000 small files among its contents) was removed, curl
needed 0.4-1.6 s instead of 0.15 s for 2,000 files; after a sync and 65 s one curl took 0.19 s and
the next 0.42 s again; probing with files of our own did not see it. So whatever removes many files
notes when (`note`), and whatever then times the creation of many files waits until 370 s have
passed (`wait`). Removals by other programs are not seen: wait six minutes after them before measuring."""
import os
import time

NOTE = "last-mass-deletion"
FORGOTTEN_AFTER = 370


def _seconds_to_wait(cache: str) -> float:
    """How long until the files last noted as removed under `cache`'s note no longer slow creation."""
    try:
        with open(os.path.join(cache, NOTE)) as f:
            removed_at = float(f.read())
    except (OSError, ValueError):
        return 0
    return max(0.0, removed_at + FORGOTTEN_AFTER - time.time())


def wait(cache: str, log, only_say: bool = False):
    """Sleeps until the files last noted as removed no longer slow creation, saying so through
    `log`; with `only_say` (bench-quick, which promises a few minutes) it says so and goes on."""
    seconds = _seconds_to_wait(cache)
    if seconds <= 0:
        return
    if only_say:
        log(f"the last run removed its files {FORGOTTEN_AFTER - seconds:.0f} s ago: "
            "small files may be slowed for all tools")
        return
    log(f"waiting {seconds:.0f} s for the disk to forget the files the last run removed")
    time.sleep(seconds)


def note(cache: str):
    """Records that many files were removed just now."""
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, NOTE), "w") as f:
        f.write(f"{time.time()}")
