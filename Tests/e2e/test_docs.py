"""The documentation stays true to the program: docs/configuration.md is what the built binary's
settings table gives (scripts/docs/configuration.py, `make docs`), and every relative link in the
README and docs/ names a file that exists."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_configuration_page_is_what_the_binary_prints(fetchd_bin):
    result = subprocess.run([sys.executable, str(ROOT / "scripts/docs/configuration.py"), "--check",
                             "--fetchd", str(fetchd_bin)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_settings_markdown_lists_every_flag_of_help(fetchd_bin):
    help_text = subprocess.run([str(fetchd_bin), "--help"], capture_output=True, text=True, check=True).stdout
    table = subprocess.run([str(fetchd_bin), "--settings-markdown"], capture_output=True, text=True, check=True).stdout
    help_flags = re.findall(r"^  (--[a-z-]+) <value>", help_text, re.M)
    table_flags = re.findall(r"^\| `FETCHD_[A-Z_]+` \| `(--[a-z-]+)` \|", table, re.M)
    assert help_flags and help_flags == table_flags


def test_relative_links_in_the_documentation_resolve():
    pages = [ROOT / "README.md", ROOT / "Benchmarks" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in LINK.findall(page.read_text("utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = target.split("#", 1)[0]
            if path and not (page.parent / path).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, "links to missing files:\n" + "\n".join(broken)
