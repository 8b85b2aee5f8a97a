"""A Gloo job whose one rank waits on something outside torch while its peers block in a
collective (``desync run`` tests of the stacks beside the dumps).

    torchrun --nproc-per-node 3 waiting_rank.py --wait-rank 1 --wait file

``--wait file``: the rank waits for a "checkpoint done" marker that never appears (a polling
``while not os.path.exists``). ``--wait lock``: it waits for a lock that a background
checkpoint-writer thread took and never gives back. Either way it never reaches the step's
all_reduce, and its peers wait there until the process group's timeout. ``--wait crash``: the
rank reads a resume manifest that is not there and dies of the ``FileNotFoundError``; torchrun
then stops its peers, which are waiting in the all_reduce.
"""

import argparse
import datetime
import os
import threading
import time

import torch
import torch.distributed as dist

checkpoint_lock = threading.Lock()


def wait_for_checkpoint(marker):
    while not os.path.exists(marker):
        time.sleep(0.2)


def write_checkpoint_forever():
    checkpoint_lock.acquire()  # a writer that hangs on its storage and never releases
    while True:
        time.sleep(1.0)


def save_state(step):
    with checkpoint_lock:
        return step


def read_manifest(path):
    with open(path) as f:
        return f.read().split()


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--wait-rank", type=int, default=1)
    p.add_argument("--wait-step", type=int, default=3)
    p.add_argument("--wait", choices=["file", "lock", "crash"], default="file")
    p.add_argument("--marker", default="checkpoint.done")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--pg-timeout", type=float, default=600.0)
    args = p.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    rank = dist.get_rank()
    if rank == args.wait_rank and args.wait == "lock":
        threading.Thread(target=write_checkpoint_forever, daemon=True).start()
    grad = torch.ones(64)
    for step in range(1, args.steps + 1):
        if rank == args.wait_rank and step == args.wait_step:
            if args.wait == "file":
                wait_for_checkpoint(args.marker)
            elif args.wait == "crash":
                read_manifest(args.marker)
            else:
                save_state(step)
        dist.all_reduce(grad)
        time.sleep(0.05)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
