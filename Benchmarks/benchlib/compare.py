"""Two builds of fetchd measured in turn, round by round (run.py --baseline): the rows of each build
pooled over its rounds, and a table of where this build's median falls against the baseline's rounds.

A figure is "behind" only when this build's median lies outside every round the baseline ran, on the
worse side; the better side is the target's (`<=`: lower is better, of the value or of its ratio
to the peer's), and a row with no target says only "above" or "below". Both builds go through the
same warm-ups and waits, so what the machine does meanwhile falls on both alike."""
from .table import Row, fmt, markdown


def pooled(runs: list[list[Row]]) -> list[Row]:
    """One row per figure and peer of the scenario runs `runs` (one build's), its rounds and the
    peer's together, in the order the first run gave them; a note is the first run's. A figure set
    beside several peers (curl -o, aria2c, ...) keeps a row for each: pooled into one, the peers'
    values were mixed into one median."""
    merged: dict[tuple[str, str, str], Row] = {}
    for rows in runs:
        for row in rows:
            key = (row.scenario, row.metric, row.peer)
            if key not in merged:
                merged[key] = Row(row.scenario, row.metric, row.unit, [], row.peer, [], row.target, row.note)
            merged[key].fetchd.extend(row.fetchd)
            merged[key].peer_values.extend(row.peer_values)
    return list(merged.values())


def verdict(this: Row, baseline: Row) -> str:
    """Where this build's median falls against the baseline's rounds."""
    if this.value is None or not baseline.fetchd:
        return ""
    low, high = min(baseline.fetchd), max(baseline.fetchd)
    if low <= this.value <= high:
        return "within"
    above = this.value > high
    if this.lower_is_better is None:
        return "above" if above else "below"
    return "**behind**" if above == this.lower_is_better else "ahead"


def render(this_rows: list[Row], baseline_rows: list[Row]) -> str:
    """This build's rows beside the baseline's: median [min–max] of each, the ratio, the verdict;
    a figure set beside several peers once (its rows per peer carry the same fetchd rounds)."""
    this = {(row.scenario, row.metric): row for row in this_rows}
    baseline = {(row.scenario, row.metric): row for row in baseline_rows}
    lines = [["scenario", "metric", "this build", "baseline", "this/baseline", "verdict"]]
    for key, row in this.items():
        other = baseline.get(key)
        if other is None or row.value is None or other.value is None:
            continue
        ratio = fmt(row.value / other.value) if other.value else ""
        lines.append([row.scenario, row.metric, _spread(row), _spread(other), ratio, verdict(row, other)])
    return markdown(lines)


def _spread(row: Row) -> str:
    unit = f" {row.unit}" if row.unit else ""
    return f"{fmt(row.value)}{unit} [{fmt(min(row.fetchd))}–{fmt(max(row.fetchd))}]"
