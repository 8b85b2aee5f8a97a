#!/usr/bin/env python3
"""Writes every output desync gives on the corpora the repository holds, so that two builds can
be compared byte for byte (a refactor must leave them identical).

    python3 scripts/snapshot_outputs.py BIN OUTDIR                 # one snapshot
    python3 scripts/snapshot_outputs.py --compare OLD_BIN NEW_BIN  # both, then the differences

What it covers (each run from the repository root, so that paths in the output are the same):
- `analyze --format json` and the text report for every dump set: tests/scenarios/*,
  tests/frameworks/*, and ../shared/external-cases/cases/* (or $DESYNC_EXTERNAL_CASES) when that
  folder exists. A set's `src/` is passed as --source-root, and its truth.json `frames_prefix`
  as --path-map PREFIX=src, as scripts/score_frameworks.py and the external scorer do;
- `lint --format json` (default and --include-indirect) and the text output over every Python
  tree held for lint: crates/desync_lint/tests/{fire,quiet}, each real_bugs/* bug, and each dump
  set's src/; plus any --lint-extra DIR (a local tree such as torch/distributed of a venv).

Normalised: nothing. No output of these commands carries timings or other nondeterminism today;
should one appear, normalise it in `normalise` below and say so here. Exit status and stderr are
recorded beside each output (stderr only when not empty).

--compare exits 1 and lists the files that differ (with a unified diff of the first few).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXTERNAL = Path(os.environ.get("DESYNC_EXTERNAL_CASES", REPO.parent / "shared" / "external-cases" / "cases"))
LINT_ROOT = REPO / "crates" / "desync_lint" / "tests"


def dump_sets() -> list[tuple[str, Path]]:
    sets = []
    for group, root in (("scenarios", REPO / "tests" / "scenarios"),
                        ("frameworks", REPO / "tests" / "frameworks"),
                        ("external", EXTERNAL)):
        if root.is_dir():
            sets += [(f"{group}/{d.name}", d) for d in sorted(root.iterdir()) if d.is_dir()]
    return sets


def analyze_args(folder: Path) -> list[str]:
    dumps = folder / "dumps" if (folder / "dumps").is_dir() else folder
    args = [str(dumps)]
    src = folder / "src"
    if src.is_dir():
        args += ["--source-root", str(src)]
    truth = folder / "truth.json"
    if truth.is_file():
        prefix = json.loads(truth.read_text()).get("frames_prefix", "")
        if prefix:
            args += ["--path-map", f"{prefix}={src}"]
    return args


def lint_trees(extra: list[str]) -> list[tuple[str, Path]]:
    trees = [("lint/fire", LINT_ROOT / "fire"), ("lint/quiet", LINT_ROOT / "quiet")]
    bugs = LINT_ROOT / "real_bugs"
    trees += [(f"lint/real_bugs/{d.name}", d) for d in sorted(bugs.iterdir()) if d.is_dir()]
    trees += [(f"lint/src/{name}", folder / "src") for name, folder in dump_sets()
              if (folder / "src").is_dir()]
    trees += [(f"lint/extra/{i}", Path(p)) for i, p in enumerate(extra)]
    return trees


def normalise(text: str) -> str:
    return text


def jobs(extra: list[str]) -> list[tuple[str, list[str]]]:
    out = []
    for name, folder in dump_sets():
        args = analyze_args(folder)
        out.append((f"{name}.analyze.json", ["analyze", *args, "--format", "json"]))
        out.append((f"{name}.analyze.txt", ["analyze", *args]))
    for name, tree in lint_trees(extra):
        out.append((f"{name}.lint.json", ["lint", str(tree), "--format", "json"]))
        out.append((f"{name}.lint-indirect.json", ["lint", str(tree), "--format", "json", "--include-indirect"]))
        out.append((f"{name}.lint.txt", ["lint", str(tree)]))
    return out


def snapshot(binary: str, outdir: Path, extra: list[str], workers: int) -> int:
    outdir.mkdir(parents=True, exist_ok=True)
    binary = str(Path(binary).resolve())

    def one(job):
        name, args = job
        env = dict(os.environ, NO_COLOR="1")
        run = subprocess.run([binary, *args], cwd=REPO, capture_output=True, text=True, env=env)
        path = outdir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(normalise(run.stdout) + f"\n--- exit {run.returncode}\n")
        if run.stderr:
            (outdir / (name + ".stderr")).write_text(normalise(run.stderr))

    todo = jobs(extra)
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, todo))
    return len(todo)


def compare(a: Path, b: Path) -> list[str]:
    names = sorted({p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file()}
                   | {p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file()})
    differ = []
    for name in names:
        fa, fb = a / name, b / name
        ta = fa.read_text() if fa.is_file() else None
        tb = fb.read_text() if fb.is_file() else None
        if ta != tb:
            differ.append(name)
            if len(differ) <= 5:
                sys.stdout.writelines(difflib.unified_diff(
                    (ta or "").splitlines(True), (tb or "").splitlines(True),
                    f"old/{name}", f"new/{name}", n=2))
    return differ


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary", help="desync binary (the old one with --compare)")
    parser.add_argument("target", help="output folder, or the new binary with --compare")
    parser.add_argument("--compare", action="store_true", help="snapshot both binaries and diff")
    parser.add_argument("--old-snapshot", help="with --compare: reuse this snapshot of the old binary")
    parser.add_argument("--lint-extra", action="append", default=[], help="another local tree to lint")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    if not args.compare:
        count = snapshot(args.binary, Path(args.target), args.lint_extra, args.jobs)
        print(f"{count} outputs written to {args.target}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(args.old_snapshot) if args.old_snapshot else Path(tmp) / "old"
        if not args.old_snapshot:
            snapshot(args.binary, old, args.lint_extra, args.jobs)
        count = snapshot(args.target, Path(tmp) / "new", args.lint_extra, args.jobs)
        differ = compare(old, Path(tmp) / "new")
    sets = len(dump_sets())
    trees = len(lint_trees(args.lint_extra))
    if differ:
        print(f"{len(differ)} of {count} outputs differ ({sets} dump sets, {trees} lint trees):")
        print("\n".join(f"  {name}" for name in differ))
        return 1
    print(f"identical: {count} outputs ({sets} dump sets, {trees} lint trees)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
