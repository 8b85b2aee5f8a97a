import torch
import torch.nn.functional as F

from telemetry.shards import shard_batches
from training.reduce import global_mean


def train(model, optimizer, args, rank: int) -> None:
    for step, (x, y) in enumerate(shard_batches(rank, args.batch_size, args.steps), start=1):
        loss = F.mse_loss(model(x), y)
        mean_loss = global_mean(loss)  # for the progress log
        if not torch.isfinite(loss):
            print(f"rank {rank}: non-finite loss at step {step}, skipping the batch", flush=True)
            continue
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if rank == 0 and step % args.log_every == 0:
            print(f"step {step}: mean loss {mean_loss.item():.4f}", flush=True)
