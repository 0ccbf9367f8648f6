"""Fills fetchd's database directly, for queues too large to build through the API in a benchmark.

Every row is a copy of a job fetchd itself created through the API (the template), with a new id,
destination, session and due time, so the rows are exactly what fetchd writes. fetchd must be
stopped while this runs.
"""
import os
import sqlite3
import time

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def download_id(millis: int, n: int) -> str:
    """fetchd's id format (26 Crockford base32 digits: 48 bits of ms, 80 bits more); sorts by (millis, n)."""
    value = (millis << 80) | n
    return "".join(ALPHABET[(value >> (5 * i)) & 31] for i in range(25, -1, -1))


def database(data_dir: str) -> str:
    return os.path.join(data_dir, "fetchd.sqlite")


def clone(data_dir: str, template_id: str, count: int, session: str, prefix: str, run_at: int | None = None,
          created_at: int | None = None) -> float:
    """Inserts `count` copies of the template job; returns the seconds it took. `run_at` (ms) sets both
    earliest_begin_at and run_at; `created_at` (ms) defaults to just before the template."""
    start = time.perf_counter()
    db = sqlite3.connect(database(data_dir))
    try:
        columns = [row[1] for row in db.execute("PRAGMA table_info(downloads)")]
        template = dict(zip(columns, db.execute(
            f"SELECT {', '.join(columns)} FROM downloads WHERE id = ?", (template_id,)).fetchone()))
        created = created_at if created_at is not None else template["created_at"] - 1
        overrides = {"session": session, "created_at": created}
        if run_at is not None:
            overrides.update(run_at=run_at, earliest_begin_at=run_at)
        base = [overrides.get(c, template[c]) for c in columns]
        id_at, dest_at = columns.index("id"), columns.index("destination")
        # A live job's destination is also in live_destination (its unique index is the one-live-job rule).
        live_at = columns.index("live_destination") if template.get("live_destination") is not None else None

        def rows():
            for n in range(count):
                row = list(base)
                row[id_at] = download_id(created, n)
                row[dest_at] = f"{prefix}/{n}"
                if live_at is not None:
                    row[live_at] = row[dest_at]
                yield row

        with db:
            db.executemany(f"INSERT INTO downloads ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                           rows())
            # fetchd counts the jobs it inserts in the same transaction (no trigger does): so must this.
            db.execute("INSERT INTO job_counts (state, count) VALUES (?, ?) "
                       "ON CONFLICT (state) DO UPDATE SET count = count + excluded.count", (template["state"], count))
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    return time.perf_counter() - start
