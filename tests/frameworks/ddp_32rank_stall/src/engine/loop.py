import torch
import torch.distributed as dist
import torch.nn.functional as F

from data.shards import prefetch, shard_path, wait_for_shard


def run_epoch(model, optimizer, shard: dict, batch: int) -> torch.Tensor:
    total = torch.zeros(())
    for i in range(0, len(shard["y"]), batch):
        x, y = shard["x"][i:i + batch], shard["y"][i:i + batch]
        loss = F.mse_loss(model(x).squeeze(-1), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total += loss.detach()
    return total


def train(model, optimizer, root, rank: int, cfg) -> None:
    for epoch in range(cfg.epochs):
        if epoch + 1 < cfg.epochs:
            prefetch(root, epoch + 1, rank, cfg)
        shard = wait_for_shard(shard_path(root, epoch, rank))
        total = run_epoch(model, optimizer, shard, cfg.batch)
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch}: mean batch loss {float(total) / dist.get_world_size():.4f}",
                  flush=True)
