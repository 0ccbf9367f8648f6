"""Writing a generated file, or checking that the committed one is what its sources give."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write_or_check(target: Path, text: str, check: bool, make_target: str) -> int:
    """Writes `text` to `target`; with `check`, writes nothing and returns 1 (saying which
    `make` target regenerates it) when `target` differs."""
    if check:
        if not target.is_file() or target.read_text("utf-8") != text:
            print(f"{target.relative_to(ROOT)} is out of date: run `make {make_target}`", file=sys.stderr)
            return 1
        return 0
    target.write_text(text, "utf-8")
    return 0
