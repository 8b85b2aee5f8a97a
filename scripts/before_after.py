#!/usr/bin/env python3
"""Before/after table of the framework corpus cases that carry `before.json` (desync's answer
recorded before any code was changed for the case; issue 42's rule).

usage: scripts/before_after.py BIN        # markdown table on stdout

"Before" comes from each case's before.json; "after" from scoring BIN now
(scripts/score_frameworks.py). Only the designed answers in expected.json decide ok/miss.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _scorer():
    spec = importlib.util.spec_from_file_location("score_frameworks",
                                                  REPO / "scripts" / "score_frameworks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def verdict_text(category: str, culprits: list[int]) -> str:
    return f"{category} {culprits}"


def mark(verdict_ok: bool, branch_ok: bool | None) -> str:
    if not verdict_ok:
        return "miss"
    return "ok" if branch_ok in (True, None) else "branch miss"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    scorer = _scorer()
    rows = []
    for case in sorted((REPO / "tests" / "frameworks").iterdir()):
        before_path = case / "before.json"
        if not before_path.is_file():
            continue
        before = json.loads(before_path.read_text())
        want = json.loads((case / "expected.json").read_text())
        now = scorer.score_case(argv[0], case)
        branch_now = (now.get("got_branch") or "none").replace(f"/tmp/desync-jobs/{case.name}/", "")
        rows.append(
            f"| `{case.name}` | {verdict_text(want['category'], want['culprit_ranks'])} "
            f"| {verdict_text(before['category'], before['culprit_ranks'])}, "
            f"{mark(before['verdict_ok'], before.get('branch_ok'))} "
            f"| {now['got']}, {mark(now['verdict_ok'], now['branch_ok'] if now['branch_scored'] else None)} "
            f"({branch_now}) |")
    print("| case | designed | before | now (branch) |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
