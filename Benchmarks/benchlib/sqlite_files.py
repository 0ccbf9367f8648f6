"""What fetchd's SQLite database takes on disk, and what fills it."""
import os
import sqlite3

SUFFIXES = ("", "-wal", "-shm")


def path(data_dir: str) -> str:
    return os.path.join(data_dir, "fetchd.sqlite")


def sizes(data_dir: str) -> dict[str, int]:
    """Bytes of the database file, its write-ahead log and its shared-memory index (0 if absent)."""
    out = {}
    for suffix in SUFFIXES:
        try:
            out[suffix or "db"] = os.path.getsize(path(data_dir) + suffix)
        except FileNotFoundError:
            out[suffix or "db"] = 0
    out["total"] = sum(out.values())
    return out


def anatomy(data_dir: str) -> dict:
    """Pages in use and free, rows per table and bytes per table or index (dbstat). Only while
    fetchd is stopped: a reader could hold back its WAL checkpoints."""
    db = sqlite3.connect(f"file:{path(data_dir)}?mode=ro", uri=True)
    try:
        pragma = lambda name: db.execute(f"PRAGMA {name}").fetchone()[0]  # noqa: E731
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {
            "page_size": pragma("page_size"), "pages": pragma("page_count"), "free_pages": pragma("freelist_count"),
            "rows": {t: db.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables},
            "bytes": dict(db.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC")),
        }
    finally:
        db.close()
