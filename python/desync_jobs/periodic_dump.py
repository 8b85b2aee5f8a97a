"""Rewrite this rank's Flight Recorder dump every few seconds, for ``desync watch --dir``.

For torch versions without the debug server (< 2.10), or clusters where its HTTP ports are
closed: each rank writes ``<dir>/rank_<N>`` (pickle, with Python frames) from a daemon thread,
atomically (temp file + rename), so a reader never sees half a dump. Call :func:`start` after
``init_process_group``::

    from desync_jobs import periodic_dump
    periodic_dump.start("/shared/fr-live", rank=dist.get_rank(), every_s=5)

The cost is one dump per interval (a few ms for 2,000 entries), on a thread that holds the GIL
only while pickling.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import torch


def dump_once(directory: Path, rank: int) -> None:
    data = torch._C._distributed_c10d._dump_fr_trace()
    tmp = directory / f".rank_{rank}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, directory / f"rank_{rank}")


def start(directory: str | os.PathLike, rank: int, every_s: float = 5.0) -> threading.Thread:
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)

    def loop() -> None:
        while True:
            try:
                dump_once(path, rank)
            except Exception as exc:  # a failed dump must never hurt training
                print(f"[periodic_dump rank {rank}] {exc}", flush=True)
            time.sleep(every_s)

    thread = threading.Thread(target=loop, name="fr-periodic-dump", daemon=True)
    thread.start()
    return thread
