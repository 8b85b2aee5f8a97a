"""Run framework jobs for real and commit their evidence under tests/frameworks/<name>/.

    python python/desync_jobs/frameworks/make.py NAME [NAME ...]
    python python/desync_jobs/frameworks/make.py --all [--skip-existing]

For each case: run the project in ``src/`` as ``job.json`` describes (one job at a
time, niced by the caller), check that the job did what it was designed to do
(every rank in ``expect.dumps`` dumped; every regex in ``expect.log`` appears in the
ranks' output), then replace ``dumps/``, ``logs/`` and ``run.json``. The designed
answer, ``expected.json``, is written by hand before the job first runs; this tool
only checks it is well formed (``check_expected``). Nothing here runs desync.
"""

from __future__ import annotations

import argparse
import json
import pickle
import re
import shutil
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from desync_jobs import run as runner  # noqa: E402
from desync_jobs.frameworks import cases_dir, jobs  # noqa: E402

CATEGORIES = {"divergence", "metadata_mismatch", "stall", "gpu_hang", "deadlock", "crash",
              "straggler", "healthy", "inconclusive"}
CONSTRUCTS = {"break", "continue", "if", "elif", "else", "except", "for", "while", "return",
              "raise", "with", "call"}
LOCAL_PATH = re.compile(rb"/work/|/root/|/home/")
MAX_CASE_DUMP_BYTES = 400_000
ATTEMPTS = 2


def lines_matching(path: Path, text: str) -> list[int]:
    return [i for i, line in enumerate(path.read_text().splitlines(), start=1)
            if line.strip() == text]


def check_expected(case: Path) -> list[str]:
    """Problems with ``expected.json`` (empty when it is well formed)."""
    problems = []
    exp = json.loads((case / "expected.json").read_text())
    required = {"category", "culprit_ranks", "process_group", "collective_seq_id", "branch",
                "notes"}
    optional = {"accept_culprits", "branch_alt", "origin", "jumped", "open"}
    missing, extra = required - set(exp), set(exp) - required - optional
    if missing or extra:
        problems.append(f"fields: missing {sorted(missing)}, unknown {sorted(extra)}")
    if "open" in exp and not (isinstance(exp["open"], str) and exp["open"].strip()):
        problems.append("open: a sentence saying what desync still lacks for this case")
    if exp.get("category") not in CATEGORIES:
        problems.append(f"category {exp.get('category')!r}")
    if exp.get("culprit_ranks") != sorted(exp.get("culprit_ranks") or []):
        problems.append("culprit_ranks must be sorted")
    refs = [("branch", exp.get("branch"))]
    refs += [("branch_alt", b) for b in exp.get("branch_alt") or []]
    refs += [("origin", exp.get("origin"))]
    for field, ref in refs:
        if ref is None:
            continue
        src = case / "src" / ref["file"]
        if not src.is_file():
            problems.append(f"{field}: no file src/{ref['file']}")
            continue
        if ref.get("construct") not in CONSTRUCTS:
            problems.append(f"{field}: construct {ref.get('construct')!r}")
        for key in ("line_text", "condition_text"):
            if key in ref and len(lines_matching(src, ref[key])) != 1:
                problems.append(f"{field}: {key} {ref[key]!r} is not exactly one line of "
                                f"src/{ref['file']} ({lines_matching(src, ref[key])})")
    return problems


def run_summary(result: runner.RunResult) -> dict:
    """The launcher's record of the run, without machine-specific paths."""
    return {
        "scenario": result.scenario,
        "world_size": result.world_size,
        "dump_format": result.dump_format,
        "prefix": result.prefix,
        "script": result.script,  # the neutral staged path the frames carry
        "elapsed_s": result.elapsed_s,
        "dump_signal": result.signal_reason,
        "deadline_hit": result.deadline_hit,
        "ranks": [
            {"rank": r.rank, "returncode": r.returncode, "killed": r.killed,
             "dump": Path(r.dump).name if r.dump else None, "dump_bytes": r.dump_bytes}
            for r in result.ranks
        ],
    }


def check_run(case: Path, result: runner.RunResult, logs: Path) -> list[str]:
    spec = json.loads((case / "job.json").read_text())
    expect = spec.get("expect", {})
    problems = []
    want = expect.get("dumps", list(range(result.world_size)))
    if result.ranks_with_dumps() != want:
        problems.append(f"dumps from ranks {result.ranks_with_dumps()}, designed {want}")
    text = "\n".join(p.read_text(errors="replace") for p in sorted(logs.glob("rank_*.log")))
    for pattern in expect.get("log", []):
        if not re.search(pattern, text, re.MULTILINE):
            problems.append(f"no log line matches {pattern!r}")
    for pattern in expect.get("log_absent", []):
        if re.search(pattern, text, re.MULTILINE):
            problems.append(f"a log line matches {pattern!r}, which the design rules out")
    reached = expect.get("reached_seq")
    if reached is not None:
        # Gloo aborts on the first size mismatch: a slow rank may be killed before it even
        # issues the designed collective, which leaves evidence the design did not intend.
        for rank in result.ranks_with_dumps():
            last = last_seq(Path(result.out_dir) / f"{result.prefix}{rank}")
            if last < reached:
                problems.append(f"rank {rank} stopped at seq {last}, before the designed "
                                f"seq {reached}")
    return problems


def last_seq(path: Path, group: str = "0") -> int:
    """The highest collective_seq_id a dump holds for process group ``group``."""
    raw = path.read_bytes()
    dump = pickle.loads(raw) if raw[:1] == b"\x80" else json.loads(raw)
    seqs = [e["collective_seq_id"] for e in dump["entries"] if e["process_group"][0] == group]
    return max(seqs, default=0)


def make(name: str) -> dict:
    case = cases_dir() / name
    problems = check_expected(case)
    if problems:
        raise SystemExit(f"{name}: expected.json: " + "; ".join(problems))
    for attempt in range(1, ATTEMPTS + 1):
        # Under the neutral stage too, so the ranks' logs name no machine-specific path.
        tmp = runner.stage_root() / "runs" / name
        shutil.rmtree(tmp, ignore_errors=True)
        result = runner.run_job(name, tmp / "dumps", log_dir=tmp / "logs")
        problems = check_run(case, result, tmp / "logs")
        if not problems:
            break
        print(f"  {name}: attempt {attempt}: " + "; ".join(problems), file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        raise SystemExit(f"{name}: the job did not run as designed (logs kept above)")
    staged = runner.stage_root() / name
    for rel in sorted(p.relative_to(case / "src") for p in (case / "src").rglob("*.py")):
        if (staged / rel).read_bytes() != (case / "src" / rel).read_bytes():
            raise SystemExit(f"{name}: staged {rel} differs from src/")
    for sub in ("dumps", "logs"):
        shutil.rmtree(case / sub, ignore_errors=True)
        shutil.copytree(tmp / sub, case / sub)
    (case / "run.json").write_text(json.dumps(run_summary(result), indent=2) + "\n")
    shutil.rmtree(tmp, ignore_errors=True)
    dump_bytes = sum(p.stat().st_size for p in (case / "dumps").iterdir())
    leaks = [str(p.relative_to(case)) for p in case.rglob("*")
             if p.is_file() and LOCAL_PATH.search(p.read_bytes())]
    if leaks:
        raise SystemExit(f"{name}: local paths in {leaks}")
    if dump_bytes > MAX_CASE_DUMP_BYTES:
        raise SystemExit(f"{name}: dumps hold {dump_bytes} bytes (> {MAX_CASE_DUMP_BYTES}); "
                         "lower fr_buffer or shorten the run")
    return {"elapsed_s": result.elapsed_s, "signal": result.signal_reason,
            "returncodes": [r.returncode for r in result.ranks], "dump_bytes": dump_bytes}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*")
    parser.add_argument("--all", action="store_true")
    parser.add_argument("--skip-existing", action="store_true",
                        help="with --all: leave cases that already have dumps")
    parser.add_argument("--check", action="store_true",
                        help="only check every expected.json; run nothing")
    args = parser.parse_args(argv)
    known = jobs()
    if args.check:
        bad = {name: check_expected(cases_dir() / name) for name in known}
        bad = {k: v for k, v in bad.items() if v}
        for name, problems in bad.items():
            print(f"{name}: " + "; ".join(problems))
        print(f"{len(known) - len(bad)}/{len(known)} expected.json files are well formed")
        return 1 if bad else 0
    names = list(known) if args.all else args.names
    if not names:
        parser.error("name a case or pass --all")
    for name in names:
        if name not in known:
            raise SystemExit(f"unknown case {name!r}; known: {', '.join(known)}")
        if args.skip_existing and (cases_dir() / name / "dumps").is_dir():
            continue
        print(f"{name}: running", file=sys.stderr)
        print(f"{name}: {json.dumps(make(name))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
