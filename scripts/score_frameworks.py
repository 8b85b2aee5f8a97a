#!/usr/bin/env python3
"""Score `desync analyze` on the framework job corpus (tests/frameworks/<case>/).

usage: scripts/score_frameworks.py BIN [--case NAME]... [--quiet] [--json FILE]

For every case with dumps/ and expected.json it runs
`BIN analyze <case>/dumps --format json --source-root <case>/src [--log <case>/logs/FILE]...`
(the job's own logs, where the case ships them: what an on-call engineer has beside the
dumps) and prints:

- verdict ok/BAD: category, culprit ranks (expected.culprit_ranks or any set in
  accept_culprits) and the exit code (0 healthy, 1 otherwise);
- branch ok/BAD where expected.branch is set: code.branch names the expected file (or a
  branch_alt's) and its `line` or `condition_line` is within one line of the line holding
  `line_text` or `condition_text` (located in src/ at scoring time, so edits that move
  lines keep the truth right); "n/a" where the design has no branch the frames can show;
- LIBRARY-LEAK when code.branch, any probe, or a call site the headline names points into
  library code (site-packages, dist-packages, the standard library).

Totals at the end; the exit status is 0 only when every case is ok on every count.
The expected answers come from each job's design (see python/desync_jobs/frameworks/README.md),
never from desync's output.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CASES = Path(os.environ.get("DESYNC_FRAMEWORK_CASES", REPO / "tests" / "frameworks"))
LIBRARY = re.compile(r"/(site|dist)-packages/|/lib/python\d+(\.\d+)?/|^<frozen |^<string>")
HEADLINE_SITE = re.compile(r"([\w./-]+\.py):(\d+)")


def is_library(path: str | None) -> bool:
    return bool(path) and bool(LIBRARY.search(path))


def line_of(src: Path, text: str) -> int | None:
    hits = [i for i, line in enumerate(src.read_text().splitlines(), 1) if line.strip() == text]
    return hits[0] if len(hits) == 1 else None


def same_file(got: str | None, want: str, src_root: Path) -> bool:
    if not got:
        return False
    got = got.replace("\\", "/")
    root = str(src_root.resolve()).replace("\\", "/") + "/"
    if got.startswith(root):
        got = got[len(root):]
    return got == want or got.endswith("/" + want)


def branch_targets(case: Path, exp: dict) -> list[tuple[str, list[int]]]:
    """(file, [lines that count]) for the expected branch and every branch_alt."""
    out = []
    for ref in [exp["branch"], *(exp.get("branch_alt") or [])]:
        src = case / "src" / ref["file"]
        lines = [line_of(src, ref[k]) for k in ("line_text", "condition_text") if k in ref]
        out.append((ref["file"], [n for n in lines if n is not None]))
    return out


def call_sites(report: dict) -> list[dict]:
    sites = [g.get("call_site") for g in report.get("groups") or []]
    for m in report.get("mismatches") or []:
        sites += [s.get("call_site") for s in m.get("sides") or []]
    return [s for s in sites if isinstance(s, dict) and s.get("file")]


def leaks(report: dict, case: Path) -> list[str]:
    found = []
    branch = ((report.get("code") or {}).get("branch")) or {}
    for key in ("file", "local_path"):
        if is_library(branch.get(key)):
            found.append(f"branch {branch[key]}:{branch.get('line')}")
            break
    for probe in report.get("probes") or []:
        if is_library(probe.get("file")) or is_library(probe.get("local_path")):
            found.append(f"probe {probe.get('name')} {probe.get('file')}:{probe.get('line')}")
    user_names = {p.name for p in (case / "src").rglob("*.py")}
    sites = call_sites(report)
    headline = (report.get("verdict") or {}).get("headline") or ""
    for name, line in HEADLINE_SITE.findall(headline):
        base, line = os.path.basename(name), int(line)
        named = [s for s in sites if os.path.basename(s["file"]) == base and s.get("line") == line]
        if named:
            library = any(is_library(s["file"]) for s in named)
        else:
            library = is_library(name) or base not in user_names
        if library:
            found.append(f"headline {name}:{line}")
    return found


def analyze(binary: str, case: Path) -> tuple[int, dict | None, float, str]:
    cmd = [binary, "analyze", str(case / "dumps"), "--format", "json",
           "--source-root", str(case / "src")]
    # The job's own log is part of what an on-call engineer has: it holds what no dump can
    # (a rank's Python exception), so the case is analysed as they would, dumps and log.
    for log in sorted((case / "logs").glob("*")) if (case / "logs").is_dir() else []:
        if log.is_file():
            cmd += ["--log", str(log)]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    elapsed = time.monotonic() - t0
    try:
        return proc.returncode, json.loads(proc.stdout), elapsed, proc.stderr
    except json.JSONDecodeError:
        return proc.returncode, None, elapsed, proc.stderr


def score_case(binary: str, case: Path) -> dict:
    exp = json.loads((case / "expected.json").read_text())
    rc, report, elapsed, err = analyze(binary, case)
    row = {"case": case.name, "seconds": round(elapsed, 2), "exit": rc,
           "want": f"{exp['category']} {exp['culprit_ranks']}", "branch_scored": exp["branch"] is not None}
    if report is None:
        row.update(verdict_ok=False, branch_ok=False if exp["branch"] else None, leaks=[],
                   got=f"no JSON (exit {rc}): {err.strip()[:160]}", got_branch=None)
        return row
    verdict = report.get("verdict") or {}
    got_culprits = sorted(verdict.get("culprit_ranks") or [])
    sides = [sorted(s) for s in exp.get("accept_culprits") or []] or [sorted(exp["culprit_ranks"])]
    want_rc = 0 if exp["category"] == "healthy" else 1
    row["verdict_ok"] = (verdict.get("category") == exp["category"] and got_culprits in sides
                         and rc == want_rc)
    row["got"] = f"{verdict.get('category')} {got_culprits}"
    branch = ((report.get("code") or {}).get("branch")) or {}
    got_file = branch.get("local_path") or branch.get("file")
    got_lines = [n for n in (branch.get("line"), branch.get("condition_line")) if isinstance(n, int)]
    row["got_branch"] = (f"{branch.get('file')}:{branch.get('line')} {branch.get('construct')}"
                         if branch else None)
    if exp["branch"] is None:
        row["branch_ok"] = None
    else:
        row["branch_ok"] = any(
            same_file(got_file, file, case / "src") and any(abs(g - w) <= 1 for g in got_lines for w in want)
            for file, want in branch_targets(case, exp))
        ref = exp["branch"]
        row["want_branch"] = f"{ref['file']}:{line_of(case / 'src' / ref['file'], ref['line_text'])} {ref['construct']}"
    row["leaks"] = leaks(report, case)
    return row


def render(row: dict) -> str:
    parts = [f"{row['case']}: verdict {'ok ' if row['verdict_ok'] else 'BAD'} got {row['got']}, "
             f"want {row['want']}"]
    if row["branch_ok"] is None:
        parts.append("branch n/a" + (f" (got {row['got_branch']})" if row.get("got_branch") else ""))
    else:
        parts.append(f"branch {'ok ' if row['branch_ok'] else 'BAD'} got {row.get('got_branch')}, "
                     f"want {row.get('want_branch')}")
    if row["leaks"]:
        parts.append("LIBRARY-LEAK " + "; ".join(row["leaks"]))
    return " | ".join(parts) + f" ({row['seconds']:.1f}s)"


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    binary = argv[0]
    only = [argv[i + 1] for i, a in enumerate(argv) if a == "--case" and i + 1 < len(argv)]
    json_out = next((argv[i + 1] for i, a in enumerate(argv) if a == "--json" and i + 1 < len(argv)), None)
    quiet = "--quiet" in argv
    cases = sorted(p for p in CASES.iterdir()
                   if (p / "expected.json").is_file() and (p / "dumps").is_dir())
    if only:
        unknown = set(only) - {c.name for c in cases}
        if unknown:
            print(f"unknown case(s): {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        cases = [c for c in cases if c.name in only]
    rows = []
    for case in cases:
        row = score_case(binary, case)
        rows.append(row)
        line = render(row)
        if not quiet or "BAD" in line or "LEAK" in line:
            print(line, flush=True)
    n = len(rows)
    v_ok = sum(r["verdict_ok"] for r in rows)
    scored = [r for r in rows if r["branch_ok"] is not None]
    b_ok = sum(r["branch_ok"] for r in scored)
    leaky = sum(bool(r["leaks"]) for r in rows)
    print(f"frameworks: verdicts {v_ok}/{n}, branch lines {b_ok}/{len(scored)}, "
          f"library leaks in {leaky}/{n} cases")
    if json_out:
        Path(json_out).write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if n and v_ok == n and b_ok == len(scored) and leaky == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
