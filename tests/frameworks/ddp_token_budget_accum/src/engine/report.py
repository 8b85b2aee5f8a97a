def log_micro_step(rank: int, epoch: int, micro: int, tokens: int, budget: int) -> None:
    if tokens >= budget:
        print(f"rank {rank}: epoch {epoch} micro-batch {micro}: {tokens} local tokens >= {budget}, "
              f"syncing gradients", flush=True)


def log_epoch(rank: int, epoch: int, updates: int, loss: float) -> None:
    print(f"rank {rank}: epoch {epoch} done, {updates} updates, last loss {loss:.3f}", flush=True)
