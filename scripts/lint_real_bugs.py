#!/usr/bin/env python3
"""Scores `desync lint` on the real-bug corpus (crates/desync_lint/tests/real_bugs/).

Each bug is a folder with `buggy.py`, `fixed.py` and `bug.toml` (the issue URL, a summary,
the buggy `line`, optional `accept_lines` that name the same construct, the collective, the
guard or jump, and the kind of desync), written from the issue before desync ran on it. The
buggy line carries a `# BUG:` comment; `--check` verifies that it matches `line`.

For every bug the scorer runs `desync lint --format json` on both files and reports:
- found: a finding (any rule) on `line` or on one of `accept_lines` of buggy.py;
- quiet: no finding at all on fixed.py;
- extra: findings on buggy.py away from those lines (noise).

    python3 scripts/lint_real_bugs.py                    # the table and the score
    python3 scripts/lint_real_bugs.py --json             # one JSON document
    python3 scripts/lint_real_bugs.py --check            # corpus well-formed? (no binary needed)
    python3 scripts/lint_real_bugs.py --min-found 3 --min-quiet 17   # a ratchet: exit 1 below

Exit status: 0 (the score is printed whatever it is), 1 when --min-found/--min-quiet are not
met or --check finds a malformed bug, 2 when the binary cannot be run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "crates" / "desync_lint" / "tests" / "real_bugs"
REQUIRED = ("url", "summary", "line", "collective", "guard", "kind")


@dataclass
class Bug:
    name: str
    folder: Path
    meta: dict

    @property
    def lines(self) -> set[int]:
        return {int(self.meta["line"]), *map(int, self.meta.get("accept_lines", []))}


@dataclass
class Score:
    bug: Bug
    found: bool
    quiet: bool
    hits: list = field(default_factory=list)   # findings on the bug's lines
    extra: list = field(default_factory=list)  # other findings on buggy.py
    fixed: list = field(default_factory=list)  # findings on fixed.py


def load_corpus(root: Path) -> list[Bug]:
    bugs = []
    for folder in sorted(p for p in root.iterdir() if (p / "bug.toml").is_file()):
        with open(folder / "bug.toml", "rb") as f:
            bugs.append(Bug(folder.name, folder, tomllib.load(f)))
    return bugs


def check(bug: Bug) -> list[str]:
    """Problems with one bug's folder (empty when well-formed)."""
    problems = [f"bug.toml has no `{key}`" for key in REQUIRED if key not in bug.meta]
    for name in ("buggy.py", "fixed.py"):
        if not (bug.folder / name).is_file():
            problems.append(f"{name} is missing")
    if problems:
        return problems
    buggy = (bug.folder / "buggy.py").read_text().splitlines()
    marked = [i for i, text in enumerate(buggy, 1) if "# BUG:" in text]
    if marked != [int(bug.meta["line"])]:
        problems.append(f"`# BUG:` comment on lines {marked}, bug.toml says line {bug.meta['line']}")
    for n in bug.lines:
        if not 1 <= n <= len(buggy) or not buggy[n - 1].strip():
            problems.append(f"line {n} is not a line of code in buggy.py")
    if "# BUG" in (bug.folder / "fixed.py").read_text():
        problems.append("fixed.py carries a `# BUG` marker")
    if not str(bug.meta.get("url", "")).startswith("https://github.com/"):
        problems.append("url is not a GitHub issue or pull request")
    return problems


def lint(binary: Path, path: Path) -> list[dict]:
    proc = subprocess.run([str(binary), "lint", "--format", "json", path.name],
                          cwd=path.parent, capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"desync lint {path} exited {proc.returncode}: {proc.stderr.strip()}")
    return json.loads(proc.stdout)["findings"]


def score(binary: Path, bug: Bug) -> Score:
    buggy = lint(binary, bug.folder / "buggy.py")
    fixed = lint(binary, bug.folder / "fixed.py")
    hits = [f for f in buggy if f["line"] in bug.lines]
    extra = [f for f in buggy if f["line"] not in bug.lines]
    return Score(bug, found=bool(hits), quiet=not fixed, hits=hits, extra=extra, fixed=fixed)


def brief(findings: list[dict]) -> str:
    return ", ".join(f"{f['rule']}@{f['line']}" for f in findings) or "-"


def print_table(scores: list[Score]) -> None:
    width = max(len(s.bug.name) for s in scores)
    print(f"{'bug':<{width}}  line  found  quiet  on its line   elsewhere in buggy   on fixed")
    for s in scores:
        print(f"{s.bug.name:<{width}}  {s.bug.meta['line']:>4}  {'yes' if s.found else 'NO ':<5}  "
              f"{'yes' if s.quiet else 'NO ':<5}  {brief(s.hits):<12}  {brief(s.extra):<19}  {brief(s.fixed)}")
    found = sum(s.found for s in scores)
    quiet = sum(s.quiet for s in scores)
    both = sum(s.found and s.quiet for s in scores)
    print(f"\nfound on its line: {found}/{len(scores)}   fixed version quiet: {quiet}/{len(scores)}   "
          f"both: {both}/{len(scores)}   extra findings on buggy files: {sum(len(s.extra) for s in scores)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", type=Path, default=Path(os.environ.get("DESYNC_BIN", REPO / "target/release/desync")),
                        help="the desync binary (default: $DESYNC_BIN or target/release/desync)")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    parser.add_argument("--check", action="store_true", help="only check that the corpus is well-formed")
    parser.add_argument("--min-found", type=int, default=0, help="exit 1 when fewer bugs are found on their line")
    parser.add_argument("--min-quiet", type=int, default=0, help="exit 1 when fewer fixed versions are quiet")
    args = parser.parse_args()

    bugs = load_corpus(args.corpus)
    malformed = {b.name: p for b in bugs if (p := check(b))}
    for name, problems in malformed.items():
        for p in problems:
            print(f"{name}: {p}", file=sys.stderr)
    if args.check or malformed:
        if not malformed:
            print(f"{len(bugs)} bugs, all well-formed")
        return 1 if malformed else 0

    if not args.bin.exists():
        print(f"desync binary not found at {args.bin} (cargo build --release -p desync, or --bin)", file=sys.stderr)
        return 2
    try:
        scores = [score(args.bin, b) for b in bugs]
    except (RuntimeError, json.JSONDecodeError, OSError) as err:
        print(err, file=sys.stderr)
        return 2

    if args.json:
        json.dump({
            "bugs": [{"name": s.bug.name, "url": s.bug.meta["url"], "line": s.bug.meta["line"],
                      "kind": s.bug.meta["kind"], "found": s.found, "quiet": s.quiet,
                      "hits": s.hits, "extra": s.extra, "fixed_findings": s.fixed} for s in scores],
            "found": sum(s.found for s in scores), "quiet": sum(s.quiet for s in scores), "total": len(scores),
        }, sys.stdout, indent=1)
        print()
    else:
        print_table(scores)
    found, quiet = sum(s.found for s in scores), sum(s.quiet for s in scores)
    if found < args.min_found or quiet < args.min_quiet:
        print(f"below the ratchet: found {found} < {args.min_found} or quiet {quiet} < {args.min_quiet}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
