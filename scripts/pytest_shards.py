"""Splits python/tests into shards that scripts/test.sh runs side by side, and a serial part.

Most of the Python suite's wall time is real multi-process jobs waiting (step sleeps, Gloo
timeouts, torch imports blocked on I/O), so two pytest processes on a 2-core machine finish in
far less than one would. Tests that measure latency or hold a deadline against a live job
(`serial` in the table) run afterwards on their own, so a neighbour's load cannot make them flap.

The table, python/tests/durations.txt, lists measured seconds per test file (a full run with
DESYNC_TEST_TIMES=FILE, summed per file by `scripts/pytest_shards.py --table FILE`) and two
marks: `serial`, and `with=NAME` for files that share a session fixture (conftest's
`fresh_run` runs each scenario once per pytest process): files with the same NAME go to the
same shard, so no job runs twice. A test file missing from the table still runs: it counts
as DEFAULT_S seconds in the parallel part, so a new file is never skipped.

Usage:
  pytest_shards.py --shard I/N     the files of parallel shard I (0-based) of N, one per line
  pytest_shards.py --serial        the serial files, one per line
  pytest_shards.py --table TIMES   a new table from a DESYNC_TEST_TIMES file (marks kept)
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TESTS = REPO / "python" / "tests"
TABLE = TESTS / "durations.txt"
DEFAULT_S = 30.0


class Row:
    def __init__(self, seconds: float, marks: list[str]) -> None:
        self.seconds = seconds
        self.marks = marks
        self.serial = "serial" in marks
        self.together = next((m[5:] for m in marks if m.startswith("with=")), None)


def read_table() -> dict[str, Row]:
    table = {}
    for line in TABLE.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        seconds, name, *marks = line.split()
        table[name] = Row(float(seconds), marks)
    return table


def row(table: dict[str, Row], name: str) -> Row:
    return table.get(name) or Row(DEFAULT_S, [])


def test_files() -> list[str]:
    return sorted(p.name for p in TESTS.glob("test_*.py"))


def shards(count: int) -> list[list[str]]:
    """Longest first onto the lightest shard: within a few seconds of even for this suite."""
    table = read_table()
    units: dict[str, tuple[float, list[str]]] = {}
    for name in test_files():
        r = row(table, name)
        if r.serial:
            continue
        key = r.together or name
        seconds, names = units.get(key, (0.0, []))
        units[key] = (seconds + r.seconds, names + [name])
    loads = [0.0] * count
    out: list[list[str]] = [[] for _ in range(count)]
    for seconds, names in sorted(units.values(), reverse=True):
        lightest = loads.index(min(loads))
        loads[lightest] += seconds
        out[lightest].extend(names)
    return [sorted(names) for names in out]


def serial() -> list[str]:
    table = read_table()
    return [name for name in test_files() if row(table, name).serial]


def new_table(times: Path) -> str:
    per_file: dict[str, float] = defaultdict(float)
    for line in times.read_text().splitlines():
        seconds, _when, nodeid = line.split(" ", 2)
        per_file[Path(nodeid.split("::", 1)[0]).name] += float(seconds)
    old = read_table() if TABLE.exists() else {}
    lines = ["# seconds per test file, then marks (scripts/pytest_shards.py says what they mean)"]
    for name in test_files():
        seconds = per_file.get(name, row(old, name).seconds)
        marks = "".join(f" {m}" for m in row(old, name).marks)
        lines.append(f"{seconds:.0f} {name}{marks}")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--shard", help="I/N")
    group.add_argument("--serial", action="store_true")
    group.add_argument("--table", type=Path)
    args = parser.parse_args()
    if args.shard:
        index, count = (int(x) for x in args.shard.split("/"))
        if not 0 <= index < count:
            parser.error(f"shard {index} of {count} does not exist")
        names = shards(count)[index]
    elif args.serial:
        names = serial()
    else:
        sys.stdout.write(new_table(args.table))
        return 0
    print("\n".join(f"python/tests/{name}" for name in names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
