"""Show what the real stacks of a framework case look like at the point ranks part.

    python python/desync_jobs/frameworks/stacks.py [NAME ...] [--all-frames]

For each case with pickle dumps: every rank's last collective (per process group), grouped
by (op, sizes, dtypes, call path), with the user frames (the project's files under
/tmp/desync-jobs/<name>/) innermost first, and the library frames between the innermost
user frame and the collective, compacted to `package/module.py:line function`. A reading
aid for designing the bridge to code; it judges nothing.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from collections import defaultdict
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from desync_jobs.frameworks import cases_dir  # noqa: E402

SITE = "/site-packages/"


def short(frame: dict, case: str) -> str:
    name = frame["filename"]
    if SITE in name:
        name = name.split(SITE, 1)[1]
    elif name.startswith(f"/tmp/desync-jobs/{case}/"):
        name = name[len(f"/tmp/desync-jobs/{case}/"):]
    return f"{name}:{frame['line']} {frame['name']}"


def is_user(frame: dict, case: str) -> bool:
    return frame["filename"].startswith(f"/tmp/desync-jobs/{case}/")


def describe(entry: dict, case: str, all_frames: bool) -> tuple[str, list[str], list[str]]:
    frames = entry.get("frames", [])  # innermost first
    user = [short(f, case) for f in frames if is_user(f, case)]
    first_user = next((i for i, f in enumerate(frames) if is_user(f, case)), len(frames))
    between = [short(f, case) for f in frames[:first_user]]
    if not all_frames and len(between) > 8:
        between = between[:3] + [f"... {len(between) - 6} more ..."] + between[-3:]
    key = (f"{entry['profiling_name']} seq {entry['collective_seq_id']} pg "
           f"{entry['process_group'][0]} sizes {entry['input_sizes']} {entry['input_dtypes']}")
    return key, user, between


def show(case: Path, all_frames: bool) -> None:
    print(f"## {case.name}")
    groups: dict[tuple, list[int]] = defaultdict(list)
    details = {}
    for path in sorted((case / "dumps").iterdir(), key=lambda p: int(p.name.rsplit("_", 1)[1])):
        raw = path.read_bytes()
        if raw[:1] != b"\x80":
            print("  (JSON dumps: no frames)\n")
            return
        dump = pickle.loads(raw)
        rank = int(path.name.rsplit("_", 1)[1])
        last_by_pg = {}
        for entry in dump["entries"]:
            last_by_pg[entry["process_group"][0]] = entry
        for entry in last_by_pg.values():
            key, user, between = describe(entry, case.name, all_frames)
            sig = (key, tuple(user), tuple(between))
            groups[sig].append(rank)
            details[sig] = (key, user, between)
    for sig, ranks in sorted(groups.items(), key=lambda kv: kv[1]):
        key, user, between = details[sig]
        print(f"  ranks {ranks}: {key}")
        print(f"    user frames (innermost first): {'; '.join(user) or '(none)'}")
        print("    library frames below the innermost user frame (innermost first):")
        for line in between:
            print(f"      {line}")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*")
    parser.add_argument("--all-frames", action="store_true")
    args = parser.parse_args(argv)
    cases = sorted(p for p in cases_dir().iterdir() if (p / "dumps").is_dir())
    for case in cases:
        if not args.names or case.name in args.names:
            show(case, args.all_frames)
    return 0


if __name__ == "__main__":
    sys.exit(main())
