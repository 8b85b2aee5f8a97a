"""A small real Gloo job with a known stall, for one fixture per torch version.

``python -m desync_jobs.version_fixture OUT`` (with the interpreter of the torch to record)
runs 3 ranks on CPU: each trains a few steps with one gradient all_reduce per step; at step 4
rank 2 leaves the loop (``if rank == STOP_RANK and step == STOP_STEP: break``) and never
issues step 4's all_reduce, so ranks 0 and 1 wait in it until Gloo's 4-second timeout. Every
rank then dumps its recorder (pickle, and JSON where this torch has it) to
``OUT/dumps/rank_<N>`` (``OUT/json/rank_<N>.json``). The recorder is turned on with
``TORCH_FR_BUFFER_SIZE`` (torch 2.8 and 2.9 record nothing without it under Gloo).

Expected: stall, culprit rank 2, at the collective after the last one every rank issued.
"""

from __future__ import annotations

import datetime
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

WORLD = 3
STEPS = 6
STOP_RANK = 2
STOP_STEP = 4


def dump(rank: int, out: Path) -> None:
    import torch

    c10d = torch._C._distributed_c10d
    (out / "dumps").mkdir(parents=True, exist_ok=True)
    (out / "dumps" / f"rank_{rank}").write_bytes(c10d._dump_fr_trace())
    if hasattr(c10d, "_dump_fr_trace_json"):
        (out / "json").mkdir(parents=True, exist_ok=True)
        data = c10d._dump_fr_trace_json()
        (out / "json" / f"rank_{rank}.json").write_bytes(
            data.encode() if isinstance(data, str) else data)


def train(rank: int, out: Path) -> None:
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", rank=rank, world_size=WORLD,
                            timeout=datetime.timedelta(seconds=4))
    weight = torch.zeros(8)
    try:
        for step in range(1, STEPS + 1):
            if rank == STOP_RANK and step == STOP_STEP:
                break  # the designed divergence: this rank stops training early
            grad = torch.full((8,), float(rank + step))
            dist.all_reduce(grad)
            weight -= 0.1 * grad / WORLD
    except RuntimeError:
        pass  # Gloo's timeout in the all_reduce rank 2 never joined
    dump(rank, out)
    if rank == STOP_RANK:
        time.sleep(6)  # stay up until the others have timed out and dumped
    os._exit(0)


def main(out: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               TORCH_FR_BUFFER_SIZE="2000")
    procs = [subprocess.Popen([sys.executable, __file__, "rank", str(r), str(out)], env=env)
             for r in range(WORLD)]
    for p in procs:
        p.wait(timeout=600)


if __name__ == "__main__":
    if sys.argv[1] == "rank":
        train(int(sys.argv[2]), Path(sys.argv[3]))
    else:
        main(Path(sys.argv[1]).resolve())
