"""Three known-answer Gloo jobs for desync's log corpus (tests/logs/gloo_*).

MODE=crash: rank 2 raises a ValueError in its data step at step 3; the others wait in all_reduce.
MODE=stall: rank 1 sleeps in its data step at step 2; the others time out in all_reduce (Gloo timeout 5 s).
MODE=extra: rank 0 issues an extra all_reduce at step 2 (a logging reduce); shapes differ, Gloo aborts/times out.
"""
import datetime, os, sys, time
import torch
import torch.distributed as dist

def load_batch(rank, step, mode):
    if mode == "crash" and rank == 2 and step == 3:
        raise ValueError(f"corrupt record in shard {rank} at step {step}")
    if mode == "stall" and rank == 1 and step == 2:
        time.sleep(60)
    return torch.ones(8) * rank

def main():
    mode = os.environ["MODE"]
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=5))
    rank = dist.get_rank()
    for step in range(5):
        grad = load_batch(rank, step, mode)
        dist.all_reduce(grad)
        if mode == "extra" and rank == 0 and step == 2:
            stat = torch.zeros(3)
            dist.all_reduce(stat)
        print(f"step {step} ok", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
