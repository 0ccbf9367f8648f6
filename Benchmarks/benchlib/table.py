"""Results: one row per figure, fetchd's median beside a peer's, the ratio and the target."""
import statistics
from dataclasses import dataclass, field


@dataclass
class Row:
    scenario: str
    metric: str
    unit: str
    fetchd: list[float]                  # one value per round
    peer: str = ""                       # e.g. "curl -o"
    peer_values: list[float] = field(default_factory=list)
    target: str = ""                     # e.g. "ratio >= 0.95", "<= 150"
    note: str = ""

    @property
    def value(self) -> float | None:
        return statistics.median(self.fetchd) if self.fetchd else None

    @property
    def peer_value(self) -> float | None:
        return statistics.median(self.peer_values) if self.peer_values else None

    @property
    def ratio(self) -> float | None:
        peer = self.peer_value
        return self.value / peer if peer and self.value is not None else None

    @property
    def spread(self) -> str:
        """(max - min) / median of fetchd's rounds: how noisy this figure was."""
        if len(self.fetchd) < 2 or not self.value:
            return ""
        return f"±{(max(self.fetchd) - min(self.fetchd)) / self.value / 2:.0%}"

    @property
    def lower_is_better(self) -> bool | None:
        """Which way the target points (of the value, or of its ratio to the peer's); None without one."""
        return self.target.split()[1] == "<=" if self.target else None

    @property
    def met(self) -> bool | None:
        if not self.target:
            return None
        subject, op, bound = self.target.split()
        value = self.ratio if subject == "ratio" else self.value
        if value is None:
            return None
        return value >= float(bound) if op == ">=" else value <= float(bound)


def fmt(value: float | None) -> str:
    if value is None:
        return ""
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if abs(value) >= 0.1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def render(rows: list[Row]) -> str:
    """A Markdown table (readable as plain text too)."""
    head = ["scenario", "metric", "fetchd", "spread", "peer", "peer value", "fetchd/peer", "target", "met"]
    lines = [head]
    for r in rows:
        met = {True: "yes", False: "**NO**", None: ""}[r.met]
        unit = f" {r.unit}" if r.unit else ""
        value = (fmt(r.value) + unit) if r.value is not None else ""
        lines.append([r.scenario, r.metric + (f" ({r.note})" if r.note else ""), value, r.spread,
                      r.peer, fmt(r.peer_value) + (unit if r.peer_values else ""), fmt(r.ratio),
                      r.target.replace("value ", ""), met])
    return markdown(lines)


def markdown(lines: list[list[str]]) -> str:
    """Rows of cells (the first is the header) as an aligned Markdown table. A `|` inside a cell
    (as in `|rate / cap − 1|`) is escaped, or it would end the cell."""
    lines = [[cell.replace("|", "\\|") for cell in line] for line in lines]
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    out = []
    for n, line in enumerate(lines):
        out.append("| " + " | ".join(cell.ljust(w) for cell, w in zip(line, widths)) + " |")
        if n == 0:
            out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(out)
