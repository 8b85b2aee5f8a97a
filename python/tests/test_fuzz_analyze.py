"""A seeded mutation fuzzer over the real dumps, through the whole `desync analyze`.

Each round takes one committed scenario's dumps (real torch pickles and JSON, NCCL and
Gloo), damages one or two of its files (bit flips, truncation, spliced or repeated ranges,
interesting bytes, huge or negative numbers in JSON, rewritten pickle integers) and runs
`desync analyze --format json` on the set under a time and memory cap. Whatever comes in,
desync must exit 0, 1 or 2 (never a signal, never a panic), and print JSON when it exits 0
or 1.

The budget is fixed (`DESYNC_FUZZ_SECONDS`, 45 s by default) and the seed too
(`DESYNC_FUZZ_SEED`), so a CI failure reproduces: the failing set is kept and its path
printed. `DESYNC_FUZZ_SEEDS` may name extra directories of dumps (`:`-separated) to mutate.
"""

from __future__ import annotations

import json
import os
import random
import re
import resource
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import SCENARIO_DIR, desync_bin

pytestmark = pytest.mark.desync

TIME_CAP_S = 30
MEMORY_CAP = 2 << 30
INTERESTING = [0x00, 0x01, 0x7F, 0x80, 0xFF, ord("("), ord("]"), ord("}"), ord('"'), ord(".")]
HUGE_NUMBERS = [b"99999999999999999999", b"-1", b"4294967295", b"1e308", b"-9223372036854775808",
                b"1048576", b"0"]


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def seed_sets() -> list[list[Path]]:
    sets = [sorted(p for p in (s / "dumps").iterdir() if p.is_file())
            for s in sorted(SCENARIO_DIR.iterdir()) if (s / "dumps").is_dir()]
    for extra in filter(None, os.environ.get("DESYNC_FUZZ_SEEDS", "").split(":")):
        files = sorted(p for p in Path(extra).rglob("*") if p.is_file())
        sets.extend([f] for f in files)
    return [s for s in sets if s]


def mutate(data: bytes, rng: random.Random, donor: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 3, 8])):
        if not buf:
            buf.extend(rng.randbytes(4))
        kind = rng.randrange(9)
        at = rng.randrange(len(buf))
        if kind == 0:
            buf[at] ^= 1 << rng.randrange(8)
        elif kind == 1:
            buf[at] = rng.choice(INTERESTING)
        elif kind == 2:
            del buf[at:at + rng.randrange(1, 64)]
        elif kind == 3:
            end = min(len(buf), at + rng.randrange(1, 256))
            buf[at:at] = buf[at:end] * rng.randrange(1, 8)
        elif kind == 4:
            buf[at:at] = rng.randbytes(rng.randrange(1, 16))
        elif kind == 5:
            del buf[rng.randrange(len(buf)):]
        elif kind == 6 and donor:
            start = rng.randrange(len(donor))
            buf[at:at] = donor[start:start + rng.randrange(1, 512)]
        elif kind == 7:
            # A number in JSON text replaced by an extreme one.
            numbers = [m.span() for m in re.finditer(rb"-?\d+", bytes(buf[:200_000]))]
            if numbers:
                a, b = rng.choice(numbers)
                buf[a:b] = rng.choice(HUGE_NUMBERS)
        elif kind == 8:
            # A pickle BININT/BININT1/BININT2 argument rewritten (ranks, seq ids, sizes, lines).
            ops = [m.start() for m in re.finditer(rb"[JKM]", bytes(buf[:200_000]))]
            if ops:
                op = rng.choice(ops)
                width = {ord("J"): 4, ord("K"): 1, ord("M"): 2}[buf[op]]
                buf[op + 1:op + 1 + width] = rng.randbytes(width)
    return bytes(buf)


def test_mutated_real_dumps_never_crash_desync(tmp_path):
    exe = desync_bin()
    assert exe.exists(), f"desync binary not found at {exe} (build it or set DESYNC_BIN)"
    budget = float(os.environ.get("DESYNC_FUZZ_SECONDS", "45"))
    seed = int(os.environ.get("DESYNC_FUZZ_SEED", "17"))
    rng = random.Random(seed)
    sets = seed_sets()
    assert sets, "no dumps to mutate"
    blobs = {p: p.read_bytes() for s in sets for p in s}
    donors = list(blobs.values())
    started = time.monotonic()
    rounds = 0
    failures = []
    while time.monotonic() - started < budget:
        rounds += 1
        files = rng.choice(sets)
        case = tmp_path / f"round{rounds}"
        case.mkdir()
        targets = rng.sample(files, k=min(len(files), rng.choice([1, 1, 2])))
        for p in files:
            data = blobs[p]
            if p in targets:
                data = mutate(data, rng, rng.choice(donors))
            (case / p.name).write_bytes(data)
        args = [str(exe), "analyze", str(case), "--format", "json"]
        try:
            proc = subprocess.run(args, capture_output=True, timeout=TIME_CAP_S, preexec_fn=_cap,
                                  check=False)
        except subprocess.TimeoutExpired:
            failures.append(f"round {rounds}: ran past {TIME_CAP_S} s: {case}")
            continue
        err = proc.stderr.decode(errors="replace")
        problem = None
        if proc.returncode not in (0, 1, 2):
            problem = f"exit {proc.returncode}"
        elif "panicked" in err:
            problem = "panic"
        elif proc.returncode in (0, 1):
            try:
                json.loads(proc.stdout)
            except ValueError as e:
                problem = f"no JSON on stdout ({e})"
        if problem:
            failures.append(f"round {rounds}: {problem}: kept in {case}\n{err[-1500:]}")
        else:
            shutil.rmtree(case)
    print(f"fuzz: {rounds} rounds in {time.monotonic() - started:.0f} s (seed {seed})")
    assert rounds > 10, f"only {rounds} rounds ran in {budget} s"
    assert not failures, f"{len(failures)} of {rounds} rounds failed (seed {seed}):\n" + "\n\n".join(failures[:5])
