"""Run PyTorch's own analyzer (``torchfrtrace``) on a dump folder and parse its report.

Used by the parity tests and to write down where ``torchfrtrace`` crashes or
blames the wrong rank. Two inputs are supported:

* the dumps as written (Gloo in torch 2.11 writes ``pg_config`` as a single
  entry named "" — torchfrtrace then dies with ``KeyError: ('0', <rank>)``);
* a *repaired* copy (:func:`repair_pg_config`): the same dumps with
  ``pg_config`` rebuilt from the entries themselves (one entry per process
  group name, members = the ranks whose dumps hold entries of that group; the
  default group gets the full world). That is what torchfrtrace would see if
  Gloo wrote a correct ``pg_config``, so its mismatch findings become
  comparable.

Report format parsed here (``EntryState.log`` in
``torch/distributed/flight_recorder/components/types.py``)::

    Not all ranks joining collective, sequence number: 55
    internal record id: 54
    group info: 0:default_pg
    collective: gloo:all_reduce
    missing ranks: {3}
    ...
    error msg: Culprit rank 3; Error type: SIZE_OR_SYNTAX_MISMATCH, ...
"""

from __future__ import annotations

import ast
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

HEADERS = [
    (re.compile(r"^Not all ranks joining collective, sequence number: (\d+)"), "missing"),
    (re.compile(r"^Collective sequence number: (\d+) has errors"), "errors"),
    (re.compile(r"^Input/output mismatch in the collective sequence number: (\d+)"), "numel"),
]
ERROR_KINDS = {
    "COLLECTIVE_TYPE_MISMATCH": "op",
    "SIZE_OR_SYNTAX_MISMATCH": "size",
    "COLLECTIVE_DTYPE_MISMATCH": "dtype",
    "COLLECTIVE_STATE_MISMATCH": "state",
}
CULPRIT = re.compile(r"Culprit rank (\d+); Error type: ([A-Z_]+)")


@dataclass
class Mismatch:
    process_group: str  # pg name as in the entries ("0", "1", ...)
    pg_desc: str | None
    collective_seq_id: int
    kind: str  # missing | op | size | dtype | state | numel
    ranks: list[int] = field(default_factory=list)  # torchfrtrace's culprits / missing ranks
    collective: str | None = None


@dataclass
class FrTraceResult:
    returncode: int
    output: str
    crashed: bool
    crash_summary: str | None
    mismatches: list[Mismatch]
    too_many_mismatches: bool = False
    # "We cannot decide what's wrong with this collective entry because we missed
    # FR dumps from ranks (...)": printed without a sequence number.
    undecided_missing_dumps: int = 0


def torchfrtrace_command() -> list[str]:
    exe = Path(sys.executable).with_name("torchfrtrace")
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace"]


def parse_report(text: str) -> list[Mismatch]:
    found: list[Mismatch] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        header = next(((m, kind) for rx, kind in HEADERS if (m := rx.match(line))), None)
        if header is None:
            i += 1
            continue
        match, kind = header
        seq = int(match.group(1))
        block: dict[str, str] = {}
        j = i + 1
        while j < len(lines) and not lines[j].startswith("collective stack trace"):
            if any(rx.match(lines[j].strip()) for rx, _ in HEADERS):
                break
            key, sep, value = lines[j].partition(": ")
            if sep:
                block[key.strip()] = value.strip()
            j += 1
        group = block.get("group info", "")
        name, _, desc = group.partition(":")
        base = dict(process_group=name, pg_desc=desc or None, collective_seq_id=seq,
                    collective=block.get("collective"))
        if kind == "missing":
            ranks = sorted(ast.literal_eval(block.get("missing ranks", "set()")) or [])
            found.append(Mismatch(kind="missing", ranks=ranks, **base))
        elif kind == "numel":
            found.append(Mismatch(kind="numel", **base))
        else:
            by_kind: dict[str, list[int]] = {}
            for rank, etype in CULPRIT.findall(block.get("error msg", "")):
                by_kind.setdefault(ERROR_KINDS.get(etype, etype.lower()), []).append(int(rank))
            for k, ranks in sorted(by_kind.items()):
                found.append(Mismatch(kind=k, ranks=sorted(ranks), **base))
        i = j
    return found


def _cli_args(trace_dir: str | os.PathLike, prefix: str, allow_incomplete_ranks: bool) -> list[str]:
    args = [str(trace_dir), "-p", prefix]
    if allow_incomplete_ranks:
        args.append("--allow-incomplete-ranks")
    return args


def _result(returncode: int, output: str) -> FrTraceResult:
    crashed = returncode != 0 or "Traceback (most recent call last)" in output
    summary = None
    if crashed:
        tail = [ln for ln in output.strip().splitlines() if ln.strip()]
        summary = tail[-1] if tail else f"exit {returncode}"
    return FrTraceResult(
        returncode=returncode, output=output, crashed=crashed, crash_summary=summary,
        mismatches=parse_report(output),
        too_many_mismatches="Too many mismatches" in output,
        undecided_missing_dumps=output.count("We cannot decide what's wrong"),
    )


def run_torchfrtrace(trace_dir: str | os.PathLike, prefix: str,
                     allow_incomplete_ranks: bool = False,
                     timeout_s: float = 300) -> FrTraceResult:
    cmd = [*torchfrtrace_command(), *_cli_args(trace_dir, prefix, allow_incomplete_ranks)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    return _result(proc.returncode, proc.stdout + proc.stderr)


# Runs torchfrtrace's `main` once per job in a child forked after one `import torch`:
# importing torch costs seconds of CPU, the analysis of a small folder a fraction of that.
# Each child gets the CLI's argv, its own stdout/stderr files and exit code, exactly as
# the `torchfrtrace` script would (an uncaught exception prints its traceback, exit 1).
_BATCH_DRIVER = r"""
import json, os, sys, traceback
from torch.distributed.flight_recorder.fr_trace import main
jobs = json.loads(sys.argv[1])
codes = []
for args, out_path in jobs:
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 1); os.dup2(fd, 2)
        sys.argv = ["torchfrtrace", *args]
        code = 0
        try:
            result = main()
            code = result if isinstance(result, int) else 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush(); sys.stderr.flush()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    codes.append(os.waitstatus_to_exitcode(status))
print(json.dumps(codes))
"""


def run_torchfrtrace_many(jobs: list[tuple[str | os.PathLike, str, bool]], scratch: Path,
                          timeout_s: float = 600) -> list[FrTraceResult]:
    """:func:`run_torchfrtrace` for each (trace_dir, prefix, allow_incomplete_ranks), in one
    Python process that imports torch once."""
    scratch = Path(scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    spec = [(_cli_args(d, p, a), str(scratch / f"torchfrtrace-{i}.out"))
            for i, (d, p, a) in enumerate(jobs)]
    proc = subprocess.run([sys.executable, "-c", _BATCH_DRIVER, json.dumps(spec)],
                          capture_output=True, text=True, timeout=timeout_s, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"torchfrtrace batch driver failed ({proc.returncode}): {proc.stderr[-2000:]}")
    codes = json.loads(proc.stdout.strip().splitlines()[-1])
    return [_result(code, Path(out).read_text(errors="replace")) for code, (_, out) in zip(codes, spec)]


def dump_ranks(trace_dir: str | os.PathLike, prefix: str) -> list[int]:
    ranks = []
    for name in os.listdir(trace_dir):
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            ranks.append(int(name[len(prefix):]))
    return sorted(ranks)


def repair_pg_config(src: str | os.PathLike, dst: str | os.PathLike, prefix: str,
                     backend_as: str | None = "nccl") -> None:
    """Copy pickle dumps from src to dst with pg_config rebuilt from the entries.

    ``backend_as``: also rewrite the ``profiling_name`` prefix ("gloo:all_reduce" ->
    "nccl:all_reduce"); torchfrtrace in torch 2.11 only accepts nccl/xccl
    ("AssertionError: name formatting error? gloo != 'nccl' or 'xccl'"), newer
    upstream versions also accept gloo. Gloo names its barrier "barrier", which
    the 2.11 analyzer rejects ("barrier is not a supported operation"); it is
    renamed to "all_reduce_barrier", the name NCCL records for the same call.
    """
    src, dst = Path(src), Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    ranks = dump_ranks(src, prefix)
    dumps = {r: pickle.loads((src / f"{prefix}{r}").read_bytes()) for r in ranks}
    world: set[int] = set(ranks)
    for d in dumps.values():
        for cfg in d.get("pg_config", {}).values():
            try:
                world.update(ast.literal_eval(cfg.get("ranks", "[]")))
            except (ValueError, SyntaxError):
                pass
    members: dict[str, set[int]] = {}
    descs: dict[str, str] = {}
    for r, d in dumps.items():
        for e in d.get("entries", []):
            name, desc = e["process_group"]
            members.setdefault(name, set()).add(r)
            descs[name] = desc
    for name, desc in descs.items():
        if desc == "default_pg":
            members[name] = set(world)
    for d in dumps.values():
        for e in d.get("entries", []):
            backend, sep, op = e["profiling_name"].partition(":")
            if backend_as and sep and backend not in ("nccl", "xccl"):
                if op == "barrier":
                    op = "all_reduce_barrier"
                e["profiling_name"] = f"{backend_as}:{op}"
    for r, d in dumps.items():
        own = {name for name, m in members.items() if r in m}
        d["pg_config"] = {
            name: {"name": name, "desc": descs[name], "ranks": str(sorted(members[name]))}
            for name in sorted(own, key=lambda n: (len(n), n))
        }
        (dst / f"{prefix}{r}").write_bytes(pickle.dumps(d, protocol=2))


def missing_ranks_of_world(trace_dir: str | os.PathLike, prefix: str) -> list[int]:
    """Ranks of the default group's world that have no dump file."""
    ranks = dump_ranks(trace_dir, prefix)
    world: set[int] = set(ranks)
    for r in ranks:
        raw = (Path(trace_dir) / f"{prefix}{r}").read_bytes()
        try:
            d = pickle.loads(raw)
        except Exception:
            continue
        for cfg in d.get("pg_config", {}).values():
            try:
                world.update(ast.literal_eval(cfg.get("ranks", "[]")))
            except (ValueError, SyntaxError):
                pass
    return sorted(world - set(ranks))


def copy_dumps(src: str | os.PathLike, dst: str | os.PathLike, prefix: str) -> None:
    dst = Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    for r in dump_ranks(src, prefix):
        shutil.copyfile(Path(src) / f"{prefix}{r}", dst / f"{prefix}{r}")


def _first_loaded_rank(trace_dir: Path, prefix: str) -> int | None:
    """The rank torchfrtrace uses as the reference: the first file os.walk yields."""
    for _root, _dirs, files in os.walk(trace_dir):
        for name in files:
            if prefix in name:
                return int(name[name.find(prefix) + len(prefix):])
    return None


def summarize(scenarios_dir: Path) -> str:
    """Markdown table of torchfrtrace's findings on every committed pickle scenario."""
    import tempfile

    rows = ["| scenario | raw dumps | repaired dumps: reference rank -> mismatches |",
            "|---|---|---|"]
    for scen in sorted(p for p in scenarios_dir.iterdir() if (p / "dumps").is_dir()):
        files = sorted((scen / "dumps").iterdir())
        if not files or files[0].read_bytes()[:1] != b"\x80":
            continue
        prefix = re.sub(r"\d+$", "", files[0].name)
        allow = bool(missing_ranks_of_world(scen / "dumps", prefix))
        raw = run_torchfrtrace(scen / "dumps", prefix, allow)

        def describe(res: FrTraceResult) -> str:
            if res.crashed and not res.mismatches:
                return f"crash: `{res.crash_summary}`"
            parts = [f"{m.kind} pg {m.process_group} seq {m.collective_seq_id} ranks {m.ranks}"
                     for m in res.mismatches]
            if res.undecided_missing_dumps:
                parts.append(f"{res.undecided_missing_dumps}x 'cannot decide ... missed FR dumps'")
            return "; ".join(parts) or "no mismatch"

        repaired = "n/a"
        if b"gloo:" in files[0].read_bytes():
            with tempfile.TemporaryDirectory() as tmp:
                repair_pg_config(scen / "dumps", tmp, prefix)
                ref = _first_loaded_rank(Path(tmp), prefix)
                repaired = f"ref {ref} -> {describe(run_torchfrtrace(tmp, prefix, allow))}"
        rows.append(f"| {scen.name} | {describe(raw)} | {repaired} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(summarize(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/scenarios")))
