#!/usr/bin/env python3
"""Writes one small instance of every hostile or partial input class desync must survive
(issue 17), from the committed real dumps, into OUT; `python/tests/test_hostile.py` runs every
command on each with a time and memory cap.

    python3 scripts/make_hostile.py OUT

OUT/manifest.json lists the cases: each has a name, the PATH to give desync, optional extra
arguments (`--source-root` ...), and what must hold beyond "exit 0/1/2, no signal, no canary
in any output" (`never_healthy`, `refused`). OUT/outside/ holds the canary: a Python-looking
file with a unique secret that no report may ever print, because no root ever contains it.
Standard library only; nothing here executes a pickle.
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import secrets
import socket
import struct
import sys
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = REPO / "tests" / "scenarios"


def load_dump(path: Path) -> dict:
    # The committed dumps are torch's own pickles of plain data (dicts, lists, tuples, str,
    # int): no class is imported to read them.
    return pickle.loads(path.read_bytes())


def scenario_dumps(name: str) -> list[tuple[str, dict]]:
    folder = SCENARIOS / name / "dumps"
    return [(p.name, load_dump(p)) for p in sorted(folder.iterdir())]


def write_pickles(folder: Path, dumps: list[tuple[str, dict]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, dump in dumps:
        (folder / name).write_bytes(pickle.dumps(dump, protocol=2))
    return folder


def varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class Cases:
    def __init__(self, out: Path):
        self.out = out
        self.cases: list[dict] = []

    def add(self, name: str, path: Path | str, args: list[str] | None = None, **expect) -> None:
        self.cases.append({"name": name, "path": str(path), "args": args or [], **expect})

    def dir(self, name: str) -> Path:
        d = self.out / "cases" / name
        d.mkdir(parents=True, exist_ok=True)
        return d


def canary(out: Path) -> tuple[Path, str]:
    """A file outside every root, shaped like the training code so a careless bridge would
    happily quote it."""
    secret = f"DESYNC-CANARY-{secrets.token_hex(8)}"
    body = "".join(
        f"def allreduce_gradients(model, world_size):  # {secret} line {i}\n"
        f"    if rank == 0:  # {secret}\n        break\n"
        for i in range(60)
    )
    path = out / "outside" / "train.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return path, secret


def partial_sets(c: Cases) -> None:
    for scenario, keep in [("healthy", "gloo_trace_rank_2"), ("early_stop", "gloo_trace_rank_0")]:
        dumps = [d for d in scenario_dumps(scenario) if d[0] == keep]
        folder = write_pickles(c.dir(f"partial_{scenario}") / "dumps", dumps)
        c.add(f"partial_{scenario}", folder, never_healthy=True, missing_named=True)


def huge_numbers(c: Cases) -> None:
    healthy = scenario_dumps("healthy")
    # A file name whose rank is 10^8: its own dump is fine, the number is not.
    folder = write_pickles(c.dir("huge_rank_name") / "dumps", healthy)
    (folder / "gloo_trace_rank_99999999").write_bytes((folder / "gloo_trace_rank_0").read_bytes())
    c.add("huge_rank_name", folder)

    dumps = copy.deepcopy(healthy)
    for _, d in dumps:
        d["pg_config"] = {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 4294967295]"}}
    c.add("huge_rank_pg_config", write_pickles(c.dir("huge_rank_pg_config") / "dumps", dumps))

    dumps = copy.deepcopy(healthy)
    for _, d in dumps:
        d["pg_config"] = {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 99999999]"}}
    c.add("large_rank_pg_config", write_pickles(c.dir("large_rank_pg_config") / "dumps", dumps))

    dumps = copy.deepcopy(healthy)
    for _, d in dumps:
        for e in d["entries"]:
            if e["profiling_name"].endswith("all_gather"):
                e["input_sizes"] = [[1]]
                e["output_sizes"] = [[1_000_000_000]]
    c.add("allgather_1e9_ranks", write_pickles(c.dir("allgather_1e9") / "dumps", dumps))

    # 10^6 ranks in pg_config: linear work, not quadratic.
    text = "[" + ", ".join(str(r) for r in range(1_000_000)) + "]"
    dumps = copy.deepcopy(healthy[:2])
    for _, d in dumps:
        d["pg_config"] = {"0": {"name": "0", "desc": "default_pg", "ranks": text}}
    c.add("pg_config_1e6_ranks", write_pickles(c.dir("pg_config_1e6") / "dumps", dumps))


def memo_fan_out(c: Cases) -> None:
    """One memoized frame list and one memoized shape referenced from every entry of an
    entry list that is itself one memoized dict repeated: a few kB that expand to 10^9."""
    name, base = scenario_dumps("healthy")[0]
    template = dict(base["entries"][2])
    frame = template["frames"][-1]
    shape = [1] * 1000
    entry = dict(template, frames=[frame] * 1000, input_sizes=[shape] * 1000,
                 output_sizes=[shape] * 1000)
    dump = dict(base, entries=[entry] * 1000)
    folder = c.dir("memo_dag") / "dumps"
    folder.mkdir(parents=True, exist_ok=True)
    for rank in range(2):
        (folder / f"gloo_trace_rank_{rank}").write_bytes(pickle.dumps(dump, protocol=2))
    c.add("memo_dag", folder)


def summary_bomb(c: Cases) -> None:
    """A summary (`desync summarize` format) whose zlib body inflates to ~1 GB of records
    that each cost one byte per column: the record count, not the file, is what is large."""
    n = 50_000_000
    body = bytearray()
    body += b"\x00" + varint(0) + varint(1)  # origin: a dump, path "", rank 0
    body += b"\x00" + varint(4) + b"2.10" + b"\x00"  # pickle, version, no comm lib
    body += varint(0) + varint(0) + varint(0) + b"\x00"  # no pg_config/status, no notes
    body += varint(0) * 7  # empty tables
    body += varint(n)
    z = zlib.compressobj(9)
    compressed = bytearray(z.compress(bytes(body)))
    total = len(body)
    # 16 columns of zeros; sizes and dtypes hold two values per record.
    for width in [1] * 6 + [2, 2] + [1] * 8:
        column = varint(width * n) + bytes(width * n)
        compressed += z.compress(column)
        total += len(column)
    compressed += z.flush()
    data = b"desync-summary 1\n" + varint(total) + bytes(compressed)
    folder = c.dir("summary_bomb") / "dumps"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gloo_trace_rank_0.desync").write_bytes(data)
    c.add("summary_bomb", folder, unreadable=True)


def json_oddities(c: Cases) -> None:
    folder = c.dir("json_bad_field") / "dumps"
    folder.mkdir(parents=True, exist_ok=True)
    for src in sorted((SCENARIOS / "json_extra_collective" / "dumps").iterdir()):
        dump = json.loads(src.read_bytes())
        if src.name.endswith("_1"):
            dump["entries"][3]["input_sizes"] = "not a list"
            dump["entries"][4]["collective_seq_id"] = {"nested": True}
        (folder / src.name).write_text(json.dumps(dump))
    c.add("json_bad_field", folder, no_crash_category=True)

    folder = c.dir("json_bom") / "dumps"
    folder.mkdir(parents=True, exist_ok=True)
    for src in sorted((SCENARIOS / "json_extra_collective" / "dumps").iterdir()):
        (folder / src.name).write_bytes(b"\xef\xbb\xbf" + src.read_bytes())
    c.add("json_bom", folder, no_crash_category=True)

    folder = write_pickles(c.dir("non_utf8_name") / "dumps", scenario_dumps("healthy"))
    (folder / os.fsdecode(b"notes_\xff\xfe_rank_7.txt")).write_bytes(b"hello")
    c.add("non_utf8_name", folder)


def special_files(c: Cases) -> None:
    d = c.dir("special")
    fifo = d / "gloo_trace_rank_0"
    if not fifo.exists():
        os.mkfifo(fifo)
    c.add("fifo_as_path", fifo, refused=True)
    c.add("dev_zero_as_path", "/dev/zero", refused=True)
    c.add("dev_urandom_as_path", "/dev/urandom", refused=True)
    sock_path = d / "sock_rank_0"
    if not sock_path.exists():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(sock_path))
        s.close()
    c.add("socket_as_path", sock_path, refused=True)
    # A FIFO inside a dump directory is skipped, the rest is read.
    folder = write_pickles(d / "dir_with_fifo", scenario_dumps("healthy"))
    inner = folder / "gloo_trace_rank_9"
    if not inner.exists():
        os.mkfifo(inner)
    c.add("fifo_in_dir", folder)
    # A file larger than any dump (sparse: no disk is used).
    big = d / "big" / "gloo_trace_rank_0"
    big.parent.mkdir(exist_ok=True)
    with open(big, "wb") as f:
        f.write(b"\x80\x02")
        f.truncate(3 << 30)
    c.add("oversized_file", big.parent, unreadable=True)


def leaking_frames(c: Cases, canary_path: Path) -> None:
    """Frames naming files outside the source root: absolute system files, `..` escapes and
    the canary, by absolute path and by a relative path that climbs to it."""
    dumps = scenario_dumps("early_stop")
    src = c.dir("leak") / "src"
    src.mkdir(exist_ok=True)
    (src / "train.py").write_bytes((SCENARIOS / "early_stop" / "src" / "train.py").read_bytes())
    (src / "escape.py").symlink_to(canary_path) if not (src / "escape.py").exists() else None
    targets = [
        str(canary_path),
        "/etc/passwd",
        "../../../../../../../../etc/passwd",
        "/proc/self/environ",
        os.path.relpath(canary_path, c.out / "cwd"),
        "/tmp/desync-jobs/early_stop/escape.py",  # a symlink in the root pointing out
    ]
    for i, target in enumerate(targets):
        variant = copy.deepcopy(dumps)
        for _, d in variant:
            for e in d["entries"]:
                for f in e.get("frames", []):
                    if f["filename"].endswith("early_stop/train.py"):
                        f["filename"] = target
                        f["name"] = "allreduce_gradients"
        folder = write_pickles(c.dir(f"leak_{i}") / "dumps", variant)
        c.add(f"leak_{i}", folder)
        c.add(f"leak_{i}_with_root", folder, ["--source-root", str(src)])
        c.add(f"leak_{i}_with_map", folder, ["--path-map", f"/tmp/desync-jobs/early_stop={src}"])


def wrong_root(c: Cases) -> None:
    """The frames say `main` at line 101 (a `break`); the root holds an unrelated file of the
    same name where line 101 sits in another function."""
    src = c.dir("wrong_root") / "src"
    src.mkdir(exist_ok=True)
    body = "def build_mesh(shape):\n" + "".join(
        f"    if shape[{i % 3}] > {i}:\n        break\n" for i in range(120)
    )
    (src / "train.py").write_text(body)
    c.add("wrong_root", SCENARIOS / "early_stop" / "dumps", ["--source-root", str(src)],
          stale_source=True)


def hostile_sources(c: Cases) -> None:
    """Python that overflows recursive parsers, and symlink loops in the source root."""
    src = c.dir("deep_source") / "src"
    src.mkdir(exist_ok=True)
    depth = 300_000
    lines = (SCENARIOS / "early_stop" / "src" / "train.py").read_text().splitlines()
    lines[100] = "    x = " + "(" * depth + "1" + ")" * depth
    lines[101] = "    y = a" + ".b" * depth
    lines[102] = "    z = " + " + ".join(["a"] * depth)
    (src / "train.py").write_text("\n".join(lines) + "\n")
    for loop in ["a", "b"]:
        link = src / loop
        if not link.exists():
            link.symlink_to(".")
    c.add("deep_source", SCENARIOS / "early_stop" / "dumps", ["--source-root", str(src)])
    c.add("lint_deep", src / "train.py", lint=True)

    lint_dir = c.dir("lint_many")
    block = "    if rank == 0:\n        dist.all_reduce(x)\n"
    (lint_dir / "many.py").write_text(
        "import torch.distributed as dist\n\ndef f(x, rank):\n" + block * 35_000)
    c.add("lint_70k_findings", lint_dir / "many.py", lint=True)
    # 20,000 rank tests inside one `if`: every one is a finding, and the nest around them is
    # followed path by path (checks/turns.rs) without going quadratic.
    nested = "        if rank == 0:\n            dist.all_reduce(x)\n"
    (lint_dir / "nest.py").write_text(
        "import torch.distributed as dist\n\ndef f(x, flag):\n    rank = dist.get_rank()\n"
        "    if flag:\n" + nested * 20_000)
    c.add("lint_20k_rank_tests_in_one_nest", lint_dir / "nest.py", lint=True)
    # 20,000 early exits, each before a collective: every collective has every exit before it
    # as a guard, so each exit is found and described once for the function, not once per
    # collective (branch::GuardFinder).
    exits = "    if rank == 0:\n        return\n    dist.all_reduce(x)\n"
    (lint_dir / "exits.py").write_text(
        "import torch.distributed as dist\n\ndef f(x):\n    rank = dist.get_rank()\n"
        + exits * 20_000)
    c.add("lint_20k_exits_before_collectives", lint_dir / "exits.py", lint=True)


def control_characters(c: Cases) -> None:
    evil = "\x1b]0;pwned\x07\x1b[2J\x1b[H\rHEALTHY\x9b31m\x00"
    html = "<script>alert(1)</script>\"><img src=x onerror=alert(1)>"
    dumps = copy.deepcopy(scenario_dumps("early_stop"))
    for _, d in dumps:
        for e in d["entries"]:
            e["profiling_name"] = e["profiling_name"] + evil
            e["process_group"] = (e["process_group"][0], "default_pg" + evil + html)
            e["input_dtypes"] = [t + evil for t in e["input_dtypes"]]
            for f in e.get("frames", []):
                f["name"] = f["name"] + evil + html
                f["filename"] = f["filename"] + evil
    c.add("control_chars", write_pickles(c.dir("control_chars") / "dumps", dumps), escapes=True)


def long_strings(c: Cases) -> None:
    dumps = copy.deepcopy(scenario_dumps("early_stop"))
    long = "x" * (8 << 20)
    for _, d in dumps:
        d["entries"][-1]["profiling_name"] = "gloo:all_reduce" + long
        d["pg_config"][""]["desc"] = long
    c.add("long_strings", write_pickles(c.dir("long_strings") / "dumps", dumps))


def deep_pickle(c: Cases) -> None:
    """Lists nested far past what any dump holds, written opcode by opcode (Python's own
    pickler would recurse)."""
    depth = 200_000
    data = b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b"."
    folder = c.dir("deep_pickle") / "dumps"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gloo_trace_rank_0").write_bytes(data)
    c.add("deep_pickle", folder, unreadable=True)


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(sys.argv[1]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    (out / "cwd").mkdir(exist_ok=True)
    canary_path, secret = canary(out)
    c = Cases(out)
    partial_sets(c)
    huge_numbers(c)
    memo_fan_out(c)
    summary_bomb(c)
    json_oddities(c)
    special_files(c)
    leaking_frames(c, canary_path)
    wrong_root(c)
    hostile_sources(c)
    control_characters(c)
    long_strings(c)
    deep_pickle(c)
    manifest = {"canary": secret, "canary_path": str(canary_path), "cwd": str(out / "cwd"),
                "cases": c.cases}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"{len(c.cases)} cases in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
